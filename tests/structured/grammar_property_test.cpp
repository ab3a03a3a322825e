// Property tests: strings drawn at random from a grammar are accepted byte by byte, and
// mutations that cannot be in the language are rejected.
#include <gtest/gtest.h>

#include <random>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

// Draws a random sentence of expression `e`; false when it went too deep (drawn again).
bool draw(const Grammar& g, int32_t e, std::mt19937& rng, std::string& out, int depth) {
  const Expr& x = g.expr(e);
  switch (x.kind) {
    case ExprKind::kEmpty:
      return true;
    case ExprKind::kNothing:
      return false;
    case ExprKind::kBytes:
      out += static_cast<char>(x.lo + rng() % (x.hi - x.lo + 1));
      return true;
    case ExprKind::kChars: {
      const auto& ranges = x.chars.ranges();
      const CodePointRange& r = ranges[rng() % ranges.size()];
      const uint32_t cp = r.lo + rng() % std::min<uint32_t>(r.hi - r.lo + 1, 3000);
      if (cp >= 0xD800 && cp <= 0xDFFF) return false;
      append_utf8(out, cp);
      return true;
    }
    case ExprKind::kSeq:
      for (int32_t k : x.kids) {
        if (!draw(g, k, rng, out, depth)) return false;
      }
      return true;
    case ExprKind::kAlt:
      return draw(g, x.kids[rng() % x.kids.size()], rng, out, depth);
    case ExprKind::kRepeat: {
      const int32_t span = x.max < 0 ? 3 : std::min(x.max - x.min, 3);
      const int32_t n = x.min + static_cast<int32_t>(rng() % static_cast<uint32_t>(span + 1));
      for (int32_t i = 0; i < n; ++i) {
        if (!draw(g, x.kids[0], rng, out, depth)) return false;
      }
      return true;
    }
    case ExprKind::kRef:
      return depth < 12 &&
             draw(g, g.rules()[static_cast<size_t>(x.rule)].body, rng, out, depth + 1);
    case ExprKind::kJsonChars: {
      static const char* kChars[] = {"a",   "Z",    " ",    "é",       "東", "😀",
                                     "\\n", "\\\"", "\\\\", "\\u00e9", "/",  "'"};
      const int32_t span = x.max < 0 ? 6 : std::min(x.max - x.min, 6);
      const int32_t n = x.min + static_cast<int32_t>(rng() % static_cast<uint32_t>(span + 1));
      for (int32_t i = 0; i < n; ++i) out += kChars[rng() % std::size(kChars)];
      return true;
    }
  }
  return false;
}

std::vector<std::string> sentences(const Grammar& g, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int tries = 0; tries < count * 50 && static_cast<int>(out.size()) < count; ++tries) {
    std::string s;
    if (draw(g, g.rules()[static_cast<size_t>(g.start())].body, rng, s, 0)) out.push_back(s);
  }
  return out;
}

void expect_sentences_accepted_and_mutations_rejected(const Grammar& grammar, bool object_root) {
  auto g = compile_grammar(grammar);
  const std::vector<std::string> drawn = sentences(grammar, 150, 11);
  ASSERT_EQ(drawn.size(), 150u);
  std::mt19937 rng(5);
  for (const std::string& s : drawn) {
    EXPECT_TRUE(matches(*g, s)) << s;
    // No JSON text or grammar here has a raw \x01 anywhere.
    std::string inserted = s;
    inserted.insert(rng() % (s.size() + 1), 1, '\x01');
    EXPECT_FALSE(matches(*g, inserted)) << inserted;
    if (object_root) {
      EXPECT_FALSE(matches(*g, s.substr(0, s.size() - 1))) << s;  // unclosed
      EXPECT_FALSE(matches(*g, s + "}")) << s;                    // closed twice
      EXPECT_TRUE(is_prefix(*g, s.substr(0, rng() % s.size())));
    }
  }
}

TEST(GrammarProperty, JsonSchemaSentencesAcceptedMutationsRejected) {
  const JsonSchemaOptions compact{.compact = true};
  expect_sentences_accepted_and_mutations_rejected(
      grammar_from_json_schema(
          R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 5},
          "i": {"type": "integer", "minimum": -20, "maximum": 300}, "e": {"enum": [1, "x"]},
          "a": {"type": "array", "items": {"type": "number"}, "maxItems": 4},
          "d": {"type": "string", "format": "date"}, "o": {"type": "object"}},
          "required": ["s", "i"]})",
          compact),
      true);
  expect_sentences_accepted_and_mutations_rejected(
      grammar_from_json_schema(
          R"({"$ref": "#/$defs/t", "$defs": {"t": {"type": "object", "properties": {
          "v": {"anyOf": [{"type": "boolean"}, {"type": "null"}, {"pattern": "^[a-c]+$"}]},
          "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
          "additionalProperties": false}}})",
          compact),
      true);
}

TEST(GrammarProperty, WhitespaceSentencesAccepted) {
  expect_sentences_accepted_and_mutations_rejected(
      grammar_from_json_schema(R"({"type": "array", "items": {"type": "object"}})", {}), false);
}

TEST(GrammarProperty, GbnfAndRegexSentencesAcceptedMutationsRejected) {
  expect_sentences_accepted_and_mutations_rejected(
      grammar_from_gbnf("root ::= item (\",\" item)*\nitem ::= [a-z]+ | \"(\" root \")\""), false);
  expect_sentences_accepted_and_mutations_rejected(
      grammar_from_regex(R"(([A-Z][a-z]{1,4} ?)+(\+|-)?\d*)"), false);
}

}  // namespace
}  // namespace pagedllm::structured::test
