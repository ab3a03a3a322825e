#include "structured/matcher.h"

#include <gtest/gtest.h>

#include "format/gguf_file.h"
#include "structured/grammar_test_util.h"
#include "test_paths.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm::structured::test {
namespace {

bool bit(const std::vector<uint32_t>& mask, int32_t id) {
  return (mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1u;
}

// Every token's bytes fed through the parser on their own: what the mask must say.
std::vector<uint32_t> brute_force_mask(const CompiledGrammar& g, const TokenVocabulary& vocab,
                                       const StackSet& state, bool terminated) {
  std::vector<uint32_t> mask(vocab.mask_words(), 0);
  Stepper stepper(g);
  for (size_t i = 0; i < vocab.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    bool ok;
    if (vocab.is_stop(id)) {
      ok = terminated || state.can_end;
    } else {
      StackSet next;
      ok = !terminated && !vocab.is_special(id) && !vocab.bytes(id).empty() &&
           stepper.step_bytes(state, vocab.bytes(id), next);
    }
    if (ok) mask[i / 32] |= 1u << (i % 32);
  }
  return mask;
}

std::shared_ptr<const TokenVocabulary> byte_level_vocab() {
  static auto vocab = TokenVocabulary::from_tokenizer(*load_tokenizer_file(
      pagedllm::test::shared_dir() + "/vectors/tokenizer/ggml-vocab-gpt-2.gguf"));
  return vocab;
}

std::shared_ptr<const TokenVocabulary> sentencepiece_vocab() {
  static auto vocab = TokenVocabulary::from_tokenizer(
      *load_tokenizer_file(pagedllm::test::model_path("llama2-tokenizer/tokenizer.bin")));
  return vocab;
}

// Walks `text`'s tokens, checking at every step that the mask equals the brute-force one and
// allows the next token; then that the end is allowed exactly where the grammar ends.
// (The TokenGrammar's step memo and mask cache carry over between calls that share it.)
void expect_masks_match_brute_force(const std::shared_ptr<const TokenGrammar>& tg,
                                    const std::vector<int32_t>& tokens) {
  const std::shared_ptr<const CompiledGrammar> g(tg, &tg->grammar());
  const std::shared_ptr<const TokenVocabulary> vocab(tg, &tg->vocab());
  GrammarMatcher matcher(tg);
  Stepper stepper(*g);
  StackSet state = stepper.initial();
  std::vector<uint32_t> mask(vocab->mask_words());
  for (size_t step = 0; step <= tokens.size(); ++step) {
    matcher.fill_next_token_bitmask(mask.data());
    const std::vector<uint32_t> expected = brute_force_mask(*g, *vocab, state, false);
    size_t differing = 0;
    for (size_t w = 0; w < mask.size(); ++w) differing += mask[w] != expected[w];
    ASSERT_EQ(differing, 0u) << "at token " << step;
    if (step == tokens.size()) break;
    ASSERT_TRUE(bit(mask, tokens[step]))
        << "token " << step << " '" << vocab->bytes(tokens[step]) << "'";
    ASSERT_TRUE(matcher.accept_token(tokens[step]));
    ASSERT_TRUE(stepper.step_bytes(state, vocab->bytes(tokens[step]), state));
  }
  EXPECT_TRUE(matcher.can_end());
  EXPECT_TRUE(bit(mask, vocab->stop_tokens()[0]));
}

void expect_masks_match_brute_force(const std::shared_ptr<const CompiledGrammar>& g,
                                    const std::shared_ptr<const TokenVocabulary>& vocab,
                                    const std::vector<int32_t>& tokens) {
  expect_masks_match_brute_force(std::make_shared<const TokenGrammar>(g, vocab), tokens);
}

const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "tags": {"type": "array",
    "items": {"enum": ["a b", "ç"]}}, "n": {"type": "number"}, "note": {"type": "string"}},
    "required": ["name", "n"], "additionalProperties": false})";
const char* kInstance =
    "{\"name\": \"Zoë \\\"Z\\\"\", \"tags\": [\"ç\", \"a b\"], \"n\": -12.5e3, "
    "\"note\": \"naïve café, 東京 — ok 😀\"}";

TEST(GrammarMatcher, MaskEqualsBruteForceOnByteLevelBpe) {
  auto tokenizer = load_tokenizer_file(pagedllm::test::shared_dir() +
                                       "/vectors/tokenizer/ggml-vocab-gpt-2.gguf");
  expect_masks_match_brute_force(schema(kSchema), byte_level_vocab(),
                                 tokenizer->encode(kInstance, false, false));
}

TEST(GrammarMatcher, MaskEqualsBruteForceOnSentencePieceWithByteFallback) {
  auto tokenizer =
      load_tokenizer_file(pagedllm::test::model_path("llama2-tokenizer/tokenizer.bin"));
  const std::vector<int32_t> tokens = tokenizer->encode(kInstance, false, false);
  // The text has characters the vocabulary spells with byte tokens (<0x..>).
  bool byte_token = false;
  for (int32_t t : tokens) byte_token = byte_token || tokenizer->piece(t).rfind("<0x", 0) == 0;
  EXPECT_TRUE(byte_token);
  expect_masks_match_brute_force(schema(kSchema), sentencepiece_vocab(), tokens);
}

// Property names that may be any string besides the declared ones, and a value that is a short
// string or a longer literal: masks whose first byte opens a string body (bounded or not) take
// that body's plain tokens at once. Two instances share one TokenGrammar, so the second one's
// masks come from transitions the first one memoized.
TEST(GrammarMatcher, MaskEqualsBruteForceWhereTheFirstByteOpensAStringBody) {
  auto tokenizer = load_tokenizer_file(pagedllm::test::shared_dir() +
                                       "/vectors/tokenizer/ggml-vocab-gpt-2.gguf");
  const auto tg = std::make_shared<const TokenGrammar>(
      schema(R"({"type": "object", "properties": {"code": {"anyOf": [
          {"type": "string", "maxLength": 2}, {"enum": ["abcdef"]}]},
          "count": {"type": "integer"}}})"),
      byte_level_vocab());
  for (const char* instance : {R"({"code": "xy", "counter": "any text at all", "c": 1})",
                               R"({"code": "abcdef", "count": 3, "cod": "z"})"}) {
    SCOPED_TRACE(instance);
    expect_masks_match_brute_force(tg, tokenizer->encode(instance, false, false));
  }
}

// Long bounded strings read characters past ASCII and escapes through a shared rule; their
// masks still take plain tokens by length, counting from the frame the rule returns to.
TEST(GrammarMatcher, MaskEqualsBruteForceInLongBoundedStrings) {
  auto tokenizer = load_tokenizer_file(pagedllm::test::shared_dir() +
                                       "/vectors/tokenizer/ggml-vocab-gpt-2.gguf");
  const auto tg = std::make_shared<const TokenGrammar>(
      schema(R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 40},
          "t": {"type": "string", "minLength": 34, "maxLength": 36}},
          "additionalProperties": false})"),
      byte_level_vocab());
  for (
      const char* instance :
      {R"({"s": "naïve café, 東京 \"q\" \u00e9 — ok 😀 the end", "t": "exactly thirty-four chars, no more"})",
       R"({"t": "thirty-five characters: é, 東, and ✓"})"}) {
    SCOPED_TRACE(instance);
    expect_masks_match_brute_force(tg, tokenizer->encode(instance, false, false));
  }
}

TEST(GrammarMatcher, MaskEqualsBruteForceForRegexAndGbnf) {
  auto tokenizer = load_tokenizer_file(pagedllm::test::shared_dir() +
                                       "/vectors/tokenizer/ggml-vocab-gpt-2.gguf");
  expect_masks_match_brute_force(regex(R"(\d{3}-[A-Z][a-z]+( [a-z]+)*\.)"), byte_level_vocab(),
                                 tokenizer->encode("555-Hello there world.", false, false));
  expect_masks_match_brute_force(gbnf("root ::= \"(\" list \")\"\nlist ::= [a-z]+ (\", \" list)?"),
                                 byte_level_vocab(),
                                 tokenizer->encode("(alpha, beta, gamma)", false, false));
}

TEST(GrammarMatcher, SpecialTokensNeverAndStopOnlyAtTheEnd) {
  auto vocab = byte_level_vocab();
  auto tg = std::make_shared<const TokenGrammar>(
      compile_grammar(grammar_from_choices({"yes", "yes!"})), vocab);
  GrammarMatcher m(tg);
  const int32_t stop = vocab->stop_tokens()[0];
  std::vector<uint32_t> mask(vocab->mask_words());
  m.fill_next_token_bitmask(mask.data());
  EXPECT_FALSE(bit(mask, stop));
  EXPECT_FALSE(m.accept_token(stop));
  ASSERT_TRUE(m.accept_bytes("yes"));
  m.fill_next_token_bitmask(mask.data());
  EXPECT_TRUE(bit(mask, stop));
  for (size_t i = 0; i < vocab->size(); ++i) {
    if (vocab->is_special(static_cast<int32_t>(i)) && static_cast<int32_t>(i) != stop) {
      EXPECT_FALSE(bit(mask, static_cast<int32_t>(i))) << i;
    }
  }
  EXPECT_TRUE(m.accept_token(stop));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_bytes("!"));
  m.fill_next_token_bitmask(mask.data());
  size_t allowed = 0;
  for (uint32_t w : mask) allowed += static_cast<size_t>(__builtin_popcount(w));
  EXPECT_EQ(allowed, vocab->stop_tokens().size());
}

TEST(GrammarMatcher, RollbackRestoresEarlierStatesAndMasks) {
  auto tokenizer = load_tokenizer_file(pagedllm::test::shared_dir() +
                                       "/vectors/tokenizer/ggml-vocab-gpt-2.gguf");
  auto tg = std::make_shared<const TokenGrammar>(schema(kSchema), byte_level_vocab());
  const std::vector<int32_t> tokens = tokenizer->encode(kInstance, false, false);
  GrammarMatcher m(tg);
  std::vector<std::vector<uint32_t>> masks;
  std::vector<uint32_t> mask(tg->vocab().mask_words());
  for (int32_t t : tokens) {
    m.fill_next_token_bitmask(mask.data());
    masks.push_back(mask);
    ASSERT_TRUE(m.accept_token(t));
  }
  ASSERT_TRUE(m.can_end());
  m.rollback(5);
  EXPECT_EQ(m.num_accepted(), tokens.size() - 5);
  EXPECT_FALSE(m.can_end());
  m.fill_next_token_bitmask(mask.data());
  EXPECT_EQ(mask, masks[tokens.size() - 5]);
  // A token the grammar refuses (a raw control byte: nowhere in JSON) leaves the state as it was.
  const int32_t control = tokenizer->encode("\x01", false, false)[0];
  EXPECT_FALSE(m.accept_token(control));
  EXPECT_EQ(m.num_accepted(), tokens.size() - 5);
  for (size_t i = tokens.size() - 5; i < tokens.size(); ++i) ASSERT_TRUE(m.accept_token(tokens[i]));
  EXPECT_TRUE(m.can_end());
  m.rollback(tokens.size());
  EXPECT_EQ(m.num_accepted(), 0u);
  m.fill_next_token_bitmask(mask.data());
  EXPECT_EQ(mask, masks[0]);
}

TEST(GrammarMatcher, PaddedVocabularyIdsAreNeverAllowed) {
  auto tokenizer = load_tokenizer_file(pagedllm::test::shared_dir() +
                                       "/vectors/tokenizer/ggml-vocab-gpt-2.gguf");
  const int padded = tokenizer->vocab_size() + 40;
  auto vocab = TokenVocabulary::from_tokenizer(*tokenizer, padded);
  EXPECT_EQ(vocab->size(), static_cast<size_t>(padded));
  auto tg = std::make_shared<const TokenGrammar>(regex(".*"), vocab);
  GrammarMatcher m(tg);
  std::vector<uint32_t> mask(vocab->mask_words());
  m.fill_next_token_bitmask(mask.data());
  for (int id = tokenizer->vocab_size(); id < padded; ++id) EXPECT_FALSE(bit(mask, id));
  EXPECT_TRUE(bit(mask, tokenizer->encode("hello", false, false)[0]));
}

}  // namespace
}  // namespace pagedllm::structured::test
