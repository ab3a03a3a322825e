#include "structured/gbnf_parser.h"

#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

TEST(GbnfParser, ArithmeticGrammarWithCommentsAndRepetition) {
  auto g = gbnf(
      "# arithmetic, llama.cpp style\n"
      "root  ::= expr\n"
      "expr  ::= term ((\"+\" | \"-\") term)*\n"
      "term  ::= factor (\"*\" factor)*\n"
      "factor ::= num | \"(\" expr \")\"\n"
      "num   ::= [0-9]{1,3}\n");
  EXPECT_TRUE(matches(*g, "1+2*(3-40)"));
  EXPECT_TRUE(matches(*g, "((7))"));
  EXPECT_FALSE(matches(*g, "1+"));
  EXPECT_FALSE(matches(*g, "1234"));
  EXPECT_TRUE(is_prefix(*g, "(1+"));
}

TEST(GbnfParser, LiteralsEscapesClassesAndAlternativesOverLines) {
  auto g = gbnf("root ::= \"a\\n\\x41\\u00e9\" [^\\]x] |\n    \"z\"+ . \n");
  EXPECT_TRUE(matches(*g, "a\nAéy"));
  EXPECT_FALSE(matches(*g, "a\nAé]"));
  EXPECT_TRUE(matches(*g, "zzz\xE2\x82\xAC"));
  EXPECT_FALSE(matches(*g, "z"));  // "." needs a character after the z's
}

TEST(GbnfParser, ErrorsGiveLineAndColumn) {
  EXPECT_EQ(error_of([] { gbnf("root ::= foo\n"); }), "gbnf: 1:10: undefined rule 'foo'");
  EXPECT_EQ(error_of([] { gbnf("root ::= \"a\"\nx ::= [ab\n"); }),
            "gbnf: 2:10: unterminated character class");
  EXPECT_EQ(error_of([] { gbnf("root ::= \"a\"\n  bad\n"); }),
            "gbnf: 2:6: expected '::=' after 'bad'");
  EXPECT_EQ(error_of([] { gbnf("x ::= \"a\"\n"); }), "gbnf: no 'root' rule");
  EXPECT_EQ(error_of([] { gbnf("root ::= (\"a\" | \"b\"\n"); }), "gbnf: 2:1: expected ')'");
  EXPECT_EQ(error_of([] { gbnf("root ::= \"\\q\""); }), "gbnf: 1:11: unknown escape '\\q'");
  EXPECT_EQ(error_of([] { gbnf("root ::= \"a\"{3,1}"); }),
            "gbnf: 1:17: repetition {m,n} with n < m");
}

TEST(GbnfParser, LeftRecursionIsRefused) {
  EXPECT_EQ(error_of([] { gbnf("root ::= root \"a\" | \"b\"\n"); }),
            "left recursion in rule 'root'");
  EXPECT_EQ(error_of([] { gbnf("root ::= x \"a\"\nx ::= y?\ny ::= root\n"); }),
            "left recursion in rule 'root'");
  // Right recursion is fine (and does not grow the matcher's stacks: tail calls).
  auto g = gbnf("root ::= \"a\" root | \"b\"\n");
  EXPECT_TRUE(matches(*g, std::string(5000, 'a') + "b"));
}

TEST(GbnfParser, ChoiceListMatchesExactlyOneChoice) {
  auto g = compile_grammar(grammar_from_choices({"yes", "no", "maybe so"}));
  EXPECT_TRUE(matches(*g, "yes"));
  EXPECT_TRUE(matches(*g, "maybe so"));
  EXPECT_FALSE(matches(*g, "maybe"));
  EXPECT_FALSE(matches(*g, "yesno"));
  EXPECT_EQ(error_of([] { grammar_from_choices({}); }), "choice list is empty");
}

}  // namespace
}  // namespace pagedllm::structured::test
