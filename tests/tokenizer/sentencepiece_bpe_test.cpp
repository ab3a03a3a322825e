#include "tokenizer/sentencepiece_bpe.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "format/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

TEST(SentencePieceBpe, GgufVocabAndLlama2cTokenizerBinAgree) {
  const auto from_gguf = load_tokenizer(test::model_path("stories260K/stories260K.gguf"), "", 512);
  const auto from_bin = load_tokenizer(test::model_path("stories260K/stories260K.bin"),
                                       test::model_path("stories260K/tok512.bin"), 512);
  for (const char* text : {"Once upon a time", "Lily's mom said, \"Let's go!\"\nThe end.",
                           "  two  spaces", "日本語 and émoji 🙂", ""}) {
    const Ids a = from_gguf->encode(text, true);
    EXPECT_EQ(a, from_bin->encode(text, true)) << text;
    EXPECT_EQ(from_gguf->decode(a), text) << text;
    EXPECT_EQ(from_bin->decode(a), text) << text;
  }
  const Ids ids = from_gguf->encode("Once upon a time", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_GT(ids.size(), 2u);
  EXPECT_LT(ids.size(), 8u);  // merged into word pieces, not characters
}

TEST(SentencePieceBpe, DecodesTheReferenceGreedyText) {
  std::ifstream in(test::model_path("stories260K/expected.json"));
  const auto doc = nlohmann::json::parse(in);
  const auto tok = load_tokenizer(test::model_path("stories260K/stories260K.gguf"), "", 512);
  std::string expected = doc["text"].get<std::string>();
  // The reference concatenates pieces; SentencePiece drops the first piece's prefix space.
  if (!expected.empty() && expected[0] == ' ') expected.erase(0, 1);
  EXPECT_EQ(tok->decode(doc["greedy_ids"].get<Ids>(), true, /*previous=*/1), expected);
}

TEST(SentencePieceBpe, UnknownCharactersFallBackToByteTokens) {
  SentencePieceVocab v;
  v.pieces = {"<unk>",
              "<s>",
              "</s>",
              "\xE2\x96\x81",
              "a",
              "\xE2\x96\x81"
              "a"};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.pieces.push_back(buf);
  }
  v.scores.assign(v.pieces.size(), 0.0f);
  v.bos = 1;
  v.eos = 2;
  SentencePieceBpeTokenizer tok(v);
  const Ids ids = tok.encode("a\xC3\xA9", false);  // "aé": é is not in the vocabulary
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], 5);         // "▁a"
  EXPECT_EQ(ids[1], 6 + 0xC3);  // <0xC3>
  EXPECT_EQ(ids[2], 6 + 0xA9);  // <0xA9>
  EXPECT_EQ(tok.decode(ids), "a\xC3\xA9");
  EXPECT_EQ(tok.decode({1, 5, 2}, /*skip_special=*/false), "<s>a</s>");
}

}  // namespace
}  // namespace pagedllm
