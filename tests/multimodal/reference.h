// Runs tests/reference/qwen2vl_reference.py (Debian's /usr/bin/python3 with numpy and PIL) and
// reads what it wrote.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_paths.h"

namespace pagedllm::test {

inline const std::string kQwen2VLReference =
    "/usr/bin/python3 " PAGEDLLM_SOURCE_DIR "/tests/reference/qwen2vl_reference.py";

// Runs `qwen2vl_reference.py COMMAND DIR` once per process; returns DIR.
inline std::string reference_dir(const std::string& command) {
  static std::map<std::string, std::string> done;
  if (auto it = done.find(command); it != done.end()) return it->second;
  const std::string dir = temp_path("qwen2vl-" + command);
  const std::string cmd = kQwen2VLReference + " " + command + " " + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "reference failed: " << cmd;
  done[command] = dir;
  return dir;
}

inline nlohmann::json reference_manifest(const std::string& command) {
  std::ifstream in(reference_dir(command) + "/manifest.json");
  EXPECT_TRUE(in.good()) << "no manifest for " << command;
  return nlohmann::json::parse(in);
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A file of little-endian float32 values, as the reference scripts write them.
inline std::vector<float> read_floats(const std::string& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// Pipes `input` to the shell command `cmd` and parses its JSON output.
inline nlohmann::json pipe_json(const std::string& cmd_prefix, const std::string& input,
                                const std::string& name = "reference-input.json") {
  const std::string file = temp_path(name);
  std::ofstream(file) << input;
  const std::string cmd = cmd_prefix + " < " + file;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << "reference failed: " << cmd;
  return nlohmann::json::parse(out);
}

// Pipes `input` to `qwen2vl_reference.py ARGS` and parses its JSON output.
inline nlohmann::json reference_json(const std::string& args, const std::string& input) {
  return pipe_json(kQwen2VLReference + " " + args, input);
}

// Greedy generation with images by tests/reference/qwen2vl_generate_reference.py (numpy + PIL
// transcriptions of HF's code): {"model", "images", "input_ids", "max_tokens"} in,
// {"prompt_ids", "tokens", "logprobs"} out.
inline nlohmann::json generate_reference(const std::string& request) {
  return pipe_json("/usr/bin/python3 " PAGEDLLM_SOURCE_DIR
                   "/tests/reference/qwen2vl_generate_reference.py",
                   request, "generate-reference.json");
}

}  // namespace pagedllm::test
