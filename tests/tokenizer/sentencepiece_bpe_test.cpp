#include "tokenizer/sentencepiece_bpe.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <set>

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

// The merge loop as it was first written: scan every adjacent pair, merge the best (leftmost on
// ties), repeat. Quadratic, but plainly right: the reference for the heap-based merge.
Ids quadratic_merges(const SentencePieceVocab& v, const std::string& text) {
  std::map<std::string, int32_t> index;
  for (size_t i = 0; i < v.pieces.size(); ++i) index.emplace(v.pieces[i], static_cast<int32_t>(i));
  std::vector<std::string> symbols;
  std::string normalized = v.space_marker;
  for (char c : text) normalized += c == ' ' ? v.space_marker : std::string(1, c);
  for (char c : normalized) symbols.emplace_back(1, c);  // the test alphabet is ASCII
  while (true) {
    float best_score = 0.0f;
    int best_at = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = index.find(symbols[i] + symbols[i + 1]);
      if (it == index.end()) continue;
      const float score = v.scores[static_cast<size_t>(it->second)];
      if (best_at < 0 || score > best_score) {
        best_score = score;
        best_at = static_cast<int>(i);
      }
    }
    if (best_at < 0) break;
    symbols[static_cast<size_t>(best_at)] += symbols[static_cast<size_t>(best_at) + 1];
    symbols.erase(symbols.begin() + best_at + 1);
  }
  Ids ids;
  for (const auto& s : symbols) ids.push_back(index.at(s));
  return ids;
}

// Random vocabularies over a 4-letter alphabet (every letter a piece, longer pieces made by
// joining two existing ones, so merges can reach them, with scores from a small set, so ties
// are common) and random texts: the heap-based merge gives the reference's ids every time.
TEST(SentencePieceBpe, HeapMergesMatchTheQuadraticReferenceOnRandomVocabularies) {
  std::mt19937 rng(5);
  const std::string letters = "ab c";
  size_t merged_tokens = 0, characters = 0;
  for (int trial = 0; trial < 300; ++trial) {
    SentencePieceVocab v;
    v.space_marker = "_";
    v.pieces = {"<unk>", "<s>", "</s>", "_", "a", "b", "c"};
    std::set<std::string> seen(v.pieces.begin(), v.pieces.end());
    for (int i = 0; i < 40; ++i) {
      const std::string piece =
          v.pieces[3 + rng() % (v.pieces.size() - 3)] + v.pieces[3 + rng() % (v.pieces.size() - 3)];
      if (piece.size() <= 8 && seen.insert(piece).second) v.pieces.push_back(piece);
    }
    for (size_t i = 0; i < v.pieces.size(); ++i) v.scores.push_back(-static_cast<float>(rng() % 6));
    v.bos = 1;
    v.eos = 2;
    const SentencePieceBpeTokenizer tok(v);
    for (int t = 0; t < 20; ++t) {
      std::string text;
      for (int n = 1 + static_cast<int>(rng() % 60); n > 0; --n) text += letters[rng() % 4];
      const Ids want = quadratic_merges(v, text);
      ASSERT_EQ(tok.encode(text, false, false), want)
          << "trial " << trial << " text '" << text << "'";
      merged_tokens += want.size();
      characters += text.size() + 1;  // with the prefix marker
    }
  }
  // The texts must merge: far fewer tokens than characters.
  EXPECT_LT(static_cast<double>(merged_tokens), 0.85 * static_cast<double>(characters));
}

}  // namespace
}  // namespace pagedllm
