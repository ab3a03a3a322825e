// Runs the pagedllm binary for CLI tests.
#pragma once

#include <gtest/gtest.h>

#include "test_paths.h"

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace pagedllm::test {

struct CliResult {
  int code = -1;
  std::string out, err;
};

// env: optional "NAME=value ..." assignments for the command.
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  // One file per process and call: ctest -j runs CLI tests side by side.
  static int calls = 0;
  const std::string err_path = temp_path("pagedllm_cli_stderr.") + std::to_string(getpid()) + "." +
                               std::to_string(calls++) + ".txt";
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(PAGEDLLM_BINARY) +
                          " " + args + " 2>" + err_path;
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  r.err.assign(std::istreambuf_iterator<char>(err), {});
  std::remove(err_path.c_str());
  return r;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace pagedllm::test
