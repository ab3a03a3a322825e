// Tokenizer::max_text_bytes_per_token(): where a tokenizer gives a bound, no text of n bytes
// ever tokenizes into fewer than n / bound tokens (checked on random text, valid UTF-8 or not),
// and a tokenizer with a stage that may delete text gives none.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "format/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm {
namespace {

// Random text mixing ASCII words, spaces and newlines, multi-byte characters and raw bytes.
std::string random_text(std::mt19937& rng) {
  static const char* const kParts[] = {"the", " ",   "  ", "\n",      "ab",  "é", "日本", "🙂",
                                       "\t",  "123", "'s", "<|bos|>", "<x>", "▁", "\xff", "\xc3"};
  std::string text;
  const int parts = std::uniform_int_distribution<int>(1, 200)(rng);
  for (int i = 0; i < parts; ++i) {
    text += kParts[std::uniform_int_distribution<size_t>(0, std::size(kParts) - 1)(rng)];
  }
  return text;
}

void expect_bound_holds(const Tokenizer& tok, const std::string& name) {
  const size_t bound = tok.max_text_bytes_per_token();
  ASSERT_GT(bound, 0u) << name;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const std::string text = random_text(rng);
    for (bool parse_special : {true, false}) {
      const size_t tokens = tok.encode(text, false, parse_special).size();
      ASSERT_GE(tokens * bound, text.size()) << name << ": [" << text << "]";
    }
  }
}

TEST(TextBytesBound, HoldsForSentencePieceAndByteLevelVocabularies) {
  expect_bound_holds(*load_tokenizer(test::model_path("stories260K/stories260K.gguf"), "", 512),
                     "stories260K");
  for (const char* name : {"llama-spm", "gpt-2", "deepseek-llm", "deepseek-coder", "mpt"}) {
    const std::string path =
        test::shared_dir() + "/vectors/tokenizer/ggml-vocab-" + std::string(name) + ".gguf";
    expect_bound_holds(*tokenizer_from_gguf(GGUFFile(path)), name);
  }
  const std::string node = std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/node_modules/@lenml/";
  expect_bound_holds(*load_hf_tokenizer(node + "tokenizer-llama3/models"), "llama3 tokenizer.json");
}

// The byte-level seed has a Replace normalizer and added tokens that strip whitespace; Qwen3's
// tokenizer.json normalizes to NFC, which may shorten text; Falcon's vocabulary lacks some
// control bytes, which are dropped for want of a token.
TEST(TextBytesBound, IsNoneWhereAStageMayDeleteOrShortenText) {
  const std::string seeds = std::string(PAGEDLLM_SOURCE_DIR) + "/fuzz/seeds/";
  for (const char* seed : {"tokenizer_bytelevel.json", "tokenizer_metaspace.json"}) {
    std::ifstream in(seeds + seed, std::ios::binary);
    const std::string json((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(tokenizer_from_json(json, "", seed)->max_text_bytes_per_token(), 0u) << seed;
  }
  const std::string node = std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/node_modules/@lenml/";
  EXPECT_EQ(load_hf_tokenizer(node + "tokenizer-qwen3/models")->max_text_bytes_per_token(), 0u);
  const std::string falcon = test::shared_dir() + "/vectors/tokenizer/ggml-vocab-falcon.gguf";
  const auto tok = tokenizer_from_gguf(GGUFFile(falcon));
  EXPECT_EQ(tok->max_text_bytes_per_token(), 0u);
  EXPECT_TRUE(tok->encode("\x03", false).empty());  // the byte with no token, gone
}

}  // namespace
}  // namespace pagedllm
