#include "structured/regex_compiler.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

TEST(RegexCompiler, ClassesQuantifiersAlternationAndGroups) {
  auto g = regex(R"((ab|cd)+[0-9]{2,3}x?)");
  EXPECT_TRUE(matches(*g, "ab12"));
  EXPECT_TRUE(matches(*g, "abcdab123x"));
  EXPECT_FALSE(matches(*g, "ab1"));
  EXPECT_FALSE(matches(*g, "ab1234"));
  EXPECT_FALSE(matches(*g, "12"));
  auto neg = regex(R"([^a-c\d]+)");
  EXPECT_TRUE(matches(*neg, "xyz!"));
  EXPECT_FALSE(matches(*neg, "xa"));
  EXPECT_FALSE(matches(*neg, "x1"));
  auto shorthand = regex(R"(\w+\s\W)");
  EXPECT_TRUE(matches(*shorthand, "abc_9 !"));
  EXPECT_FALSE(matches(*shorthand, "abc !!"));
}

TEST(RegexCompiler, UnicodeEscapesAndMultibyteClasses) {
  auto g = regex(R"([\u00e0-\u00ff]+\u{1F600}.)");
  EXPECT_TRUE(matches(*g, "éè\xF0\x9F\x98\x80z"));
  EXPECT_TRUE(matches(*g, "à😀\xE4\xB8\xAD"));  // '.' takes one whole character
  EXPECT_FALSE(matches(*g, "e😀z"));
  EXPECT_FALSE(matches(*g, "é😀\n"));             // '.' is not a newline
  EXPECT_TRUE(is_prefix(*g, "é\xF0\x9F"));       // half a character can still go on
  EXPECT_FALSE(is_prefix(*g, "é\xF0\x9F\x41"));  // an invalid continuation byte cannot
}

TEST(RegexCompiler, AnchorsAtTheEndsAndLazyQuantifiers) {
  auto g = regex(R"(^a.*?b$|^c$)");
  EXPECT_TRUE(matches(*g, "axxb"));
  EXPECT_TRUE(matches(*g, "c"));
  EXPECT_FALSE(matches(*g, "axx"));
}

TEST(RegexCompiler, UnsupportedAndMalformedPatternsAreErrorsWithOffsets) {
  EXPECT_EQ(error_of([] { regex("a(?=b)"); }), "regex: lookahead is not supported at offset 3");
  EXPECT_EQ(error_of([] { regex(R"((a)\1)"); }),
            "regex: backreferences are not supported at offset 5");
  EXPECT_EQ(error_of([] { regex("[b-a]"); }), "regex: range out of order at offset 4");
  EXPECT_EQ(error_of([] { regex("a{3,2}"); }), "regex: repetition {n,m} with m < n at offset 6");
  EXPECT_EQ(error_of([] { regex("*a"); }), "regex: nothing to repeat at offset 1");
  EXPECT_EQ(error_of([] { regex("a)"); }), "regex: unexpected ')' at offset 1");
  EXPECT_EQ(error_of([] { regex("a^b"); }),
            "regex: '^' is only supported at the start of the pattern at offset 1");
}

// Property: on random strings over the pattern's alphabet and their mutations, the grammar
// agrees with std::regex (ECMAScript), an independent implementation.
TEST(RegexCompiler, AgreesWithStdRegexOnRandomAndMutatedStrings) {
  const std::vector<std::string> patterns = {R"((ab|a)*c?)",        R"([a-c]{2,4}(d|e)+)",
                                             R"(a?b*(c|d){1,2}e?)", R"((a|bc|)[cd]*a{0,2})",
                                             R"(\d+(\.\d+)?)",      R"([^ab]a+|b{3})"};
  std::mt19937 rng(7);
  const std::string alphabet = "abcde.1x";
  for (const std::string& p : patterns) {
    auto g = regex(p);
    const std::regex reference(p, std::regex::ECMAScript);
    int matched = 0;
    for (int i = 0; i < 400; ++i) {
      std::string s;
      const size_t len = rng() % 7;
      for (size_t k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      const bool expected = std::regex_match(s, reference);
      matched += expected;
      EXPECT_EQ(matches(*g, s), expected) << p << " on '" << s << "'";
    }
    EXPECT_GT(matched, 0) << p;  // the sample reached the language
  }
}

TEST(RegexCompiler, AnchorsInsideBranchesThatAreOneGroup) {
  // In a schema's pattern (search mode): each group-wrapped branch anchored on its own.
  auto g = compile_grammar([] {
    Grammar gr;
    gr.set_start(gr.add_rule(
        "p", add_regex(gr, R"((^[0-9]+\.[0-9]+$)|(^v[a-z]+$)|(?:_x_))", {.search = true})));
    return gr;
  }());
  EXPECT_TRUE(matches(*g, "1.5"));
  EXPECT_TRUE(matches(*g, "vabc"));
  EXPECT_TRUE(matches(*g, "aa_x_bb"));
  EXPECT_FALSE(matches(*g, "a1.5"));
  EXPECT_FALSE(matches(*g, "vabc1"));
  // A group followed by more is left as it was ('^' inside it stays an error).
  EXPECT_NE(error_of([] { regex("(^a)b"); }), "");
}

}  // namespace
}  // namespace pagedllm::structured::test
