// Bad model files give one clear error naming the file, never a crash: truncation, wrong magic,
// corrupted bytes anywhere in the header.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "loader/gguf_loader.h"
#include "loader/llama2c_loader.h"
#include "loader/load_model.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

// Throws (the test fails with the path) rather than handing an empty file to the corruptions.
std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

std::string write_bytes(const std::string& name, const std::vector<char>& bytes) {
  const std::string path = test::temp_path(name);
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string load_error(const std::string& path) {
  try {
    load_model(path);
  } catch (const ModelLoadError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFileErrors, TruncatedGgufNamesTheFileAndTheTensor) {
  auto bytes = read_bytes(test::model_path("stories260K/stories260K.gguf"));
  bytes.resize(bytes.size() - 1000);
  const std::string path = write_bytes("truncated.gguf", bytes);
  const std::string err = load_error(path);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("outside the file"), std::string::npos) << err;
}

TEST(ModelFileErrors, TruncatedLlama2cCheckpointIsNotMistakenForAModel) {
  auto bytes = read_bytes(test::model_path("stories260K/stories260K.bin"));
  bytes.resize(bytes.size() / 2);
  const std::string path = write_bytes("truncated.bin", bytes);
  EXPECT_NE(load_error(path).find("unrecognized model format"), std::string::npos);
  EXPECT_THROW(load_llama2c(path), ModelLoadError);
}

TEST(ModelFileErrors, WrongMagicAndMissingFile) {
  const std::string path = write_bytes("garbage.gguf", std::vector<char>(64, 'x'));
  EXPECT_NE(load_error(path).find("unrecognized model format"), std::string::npos);
  EXPECT_NE(load_error("/nonexistent/model.gguf").find("no such file"), std::string::npos);
  std::vector<char> bad_version = read_bytes(test::model_path("stories260K/stories260K.gguf"));
  bad_version[4] = 9;
  EXPECT_NE(load_error(write_bytes("v9.gguf", bad_version)).find("unsupported version 9"),
            std::string::npos);
}

TEST(ModelFileErrors, UnsupportedTensorTypeIsNamed) {
  auto bytes = read_bytes(test::model_path("stories260K/stories260K.gguf"));
  // Find token_embd.weight's type field in the header and set it to IQ2_XXS (16), an i-quant
  // this engine does not read.
  const std::string name = "token_embd.weight";
  auto it = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
  ASSERT_NE(it, bytes.end());
  const size_t type_at = static_cast<size_t>(it - bytes.begin()) + name.size() + 4 + 2 * 8;
  const uint32_t iq2_xxs = 16;
  std::memcpy(bytes.data() + type_at, &iq2_xxs, 4);
  const std::string err = load_error(write_bytes("iq2_xxs.gguf", bytes));
  EXPECT_NE(err.find("token_embd.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("IQ2_XXS"), std::string::npos) << err;
}

// A corpus-style regression for the GGUF parser: thousands of random corruptions of a real
// header must each load or fail cleanly (run under ASan/UBSan in CI).
TEST(ModelFileErrors, RandomlyCorruptedGgufHeadersNeverCrash) {
  const auto original = read_bytes(test::model_path("stories260K/stories260K.gguf"));
  std::mt19937 rng(1234);
  const size_t header_span = 20000;  // metadata, vocabulary and tensor infos
  int failures = 0;
  for (int round = 0; round < 300; ++round) {
    auto bytes = original;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      bytes[rng() % std::min(header_span, bytes.size())] = static_cast<char>(rng());
    }
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    const std::string path = write_bytes("fuzz.gguf", bytes);
    try {
      ModelWeights w = load_model(path);
      EXPECT_GT(w.config.vocab_size, 0);
    } catch (const ModelLoadError& e) {
      ++failures;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(failures, 0);
}

}  // namespace
}  // namespace pagedllm
