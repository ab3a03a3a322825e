// llama.cpp's vocabulary test vectors (../shared/vectors/tokenizer): each input tokenized without
// BOS must give exactly the expected ids. The SentencePiece vocabularies run here; the
// byte-level BPE ones (gpt2 model) belong to the tokenizer issue.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "loader/gguf_file.h"
#include "test_paths.h"
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

class GgmlVocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(GgmlVocabVectors, EveryInputGivesTheExpectedIds) {
  const std::string base =
      test::shared_dir() + "/vectors/tokenizer/ggml-vocab-" + GetParam() + ".gguf";
  const auto tokenizer = tokenizer_from_gguf(GGUFFile(base));
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
    EXPECT_EQ(tokenizer->encode(cases[checked], /*add_special=*/false), want)
        << "input #" << checked << ": [" << cases[checked] << "]";
  }
  EXPECT_GE(checked, 40u);
}

INSTANTIATE_TEST_SUITE_P(SentencePiece, GgmlVocabVectors, ::testing::Values("llama-spm", "phi-3"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace pagedllm
