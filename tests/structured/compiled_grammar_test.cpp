#include "structured/compiled_grammar.h"

#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

std::string utf8(uint32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

// Every scalar value U+0020..U+10FFFF as one character: the lead bytes fan out, and the
// continuation bytes still to read are shared: 1, 2 or 3 of 80-BF, and the four second
// bytes that are narrower (after E0, ED, F0 and F4). With the start and the end: 9 states.
TEST(CompiledGrammar, AUnicodeClassSharesTheEndsOfItsByteSequences) {
  Grammar g;
  CodePointSet all;
  all.add(0x20, 0x10FFFF);
  g.set_start(g.add_rule("root", g.chars(all)));
  const auto compiled = compile_grammar(g);
  EXPECT_EQ(compiled->states.size(), 9u);
  for (uint32_t cp : {0x20u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFu, 0x1000u, 0xD7FFu, 0xE000u,
                      0xFFFFu, 0x10000u, 0x3FFFFu, 0x40000u, 0xFFFFFu, 0x100000u, 0x10FFFFu}) {
    EXPECT_TRUE(matches(*compiled, utf8(cp))) << std::hex << cp;
  }
  EXPECT_FALSE(matches(*compiled, "\x1F"));
  EXPECT_FALSE(matches(*compiled, "\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(matches(*compiled, "\xC0\x80"));          // overlong
  EXPECT_FALSE(matches(*compiled, "\xE0\x9F\xBF"));      // overlong
  EXPECT_FALSE(matches(*compiled, "\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(matches(*compiled, "\xC3"));              // cut short
}

// The tail that follows 40 different prefixes is built once, as a rule of its own that each
// place calls, instead of 40 times; the language is the same.
TEST(CompiledGrammar, ALargeExpressionMetAgainBecomesOneSharedRule) {
  const auto build = [](bool share) {
    Grammar g;
    const auto tail = [&] { return g.seq({g.json_chars(0, -1), g.literal("\"")}); };
    const int32_t shared = tail();
    std::vector<int32_t> alts;
    for (int i = 0; i < 40; ++i) {
      alts.push_back(g.seq({g.literal("k" + std::to_string(i) + ":\""), share ? shared : tail()}));
    }
    g.set_start(g.add_rule("root", g.alt(alts)));
    return compile_grammar(g);
  };
  const auto shared = build(true);
  const auto copied = build(false);
  EXPECT_EQ(shared->rule_start.size(), 2u);
  EXPECT_EQ(copied->rule_start.size(), 1u);
  EXPECT_LT(shared->states.size() * 3, copied->states.size());  // 261 against 791
  for (const auto& g : {shared, copied}) {
    EXPECT_TRUE(matches(*g, "k7:\"any text \\\" here\""));
    EXPECT_TRUE(matches(*g, "k39:\"\""));
    EXPECT_FALSE(matches(*g, "k7:\"open"));
    EXPECT_FALSE(matches(*g, "k40:\"x\""));
    EXPECT_FALSE(matches(*g, "k7:\"x\"y"));
  }
}

// "maxLength": 1000 reads characters past ASCII and escapes through one shared rule: about a
// state per character (inline, each character would take a dozen), and the same language.
TEST(CompiledGrammar, ALongBoundedStringTakesAboutAStatePerCharacter) {
  const auto g = schema(R"({"type": "string", "minLength": 998, "maxLength": 1000})");
  EXPECT_LT(g->states.size(), 1200u);
  const auto quoted = [](const std::string& body) { return "\"" + body + "\""; };
  std::string body;
  for (int i = 0; i < 997; ++i) body += i % 3 == 0 ? "é" : i % 3 == 1 ? "a" : "\\n";
  EXPECT_FALSE(matches(*g, quoted(body)));  // 997 characters
  EXPECT_TRUE(matches(*g, quoted(body + "😀")));
  EXPECT_TRUE(matches(*g, quoted(body + "\\u00e9z")));
  EXPECT_TRUE(matches(*g, quoted(body + "東\\\"京")));
  EXPECT_FALSE(matches(*g, quoted(body + "abcd")));  // 1001
  EXPECT_FALSE(matches(*g, quoted(body + "a\"b")));
  EXPECT_FALSE(matches(*g, quoted(body + "\\x1")));
  EXPECT_FALSE(matches(*g, quoted(body + "\xC3")));
}

// Alternatives start at the node before them; one that loops must not let another run after it
// (a loop goes through a node of its own).
TEST(CompiledGrammar, AlternativesThatLoopStayApart) {
  Grammar g;
  const int32_t as = g.repeat(g.literal("a"), 0, -1);
  const int32_t bs = g.repeat(g.literal("b"), 1, -1);
  g.set_start(g.add_rule("root", g.seq({g.alt({as, bs, g.literal("c")}), g.literal(";")})));
  const auto compiled = compile_grammar(g);
  for (const char* ok : {";", "aaa;", "b;", "bbb;", "c;"})
    EXPECT_TRUE(matches(*compiled, ok)) << ok;
  for (const char* bad : {"ab;", "ba;", "ac;", "cc;", "bc;", "aab"}) {
    EXPECT_FALSE(matches(*compiled, bad)) << bad;
  }
}

}  // namespace
}  // namespace pagedllm::structured::test
