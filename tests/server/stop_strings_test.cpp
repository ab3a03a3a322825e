#include "server/stop_strings.h"

#include <gtest/gtest.h>

namespace pagedllm::server {
namespace {

TEST(StopStringMatcher, WithoutStopsTextPassesThroughUnchanged) {
  StopStringMatcher m({}, false);
  EXPECT_EQ(m.push("Hello"), "Hello");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.matched());
}

TEST(StopStringMatcher, HoldsBackAPossibleStartAndTrimsTheStopSplitAcrossPieces) {
  StopStringMatcher m({"\n\n"}, false);
  EXPECT_EQ(m.push("Hello\n"), "Hello");
  EXPECT_EQ(m.push("\nBye"), "");
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.matched_stop(), "\n\n");
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStringMatcher, ReleasesHeldTextWhenItTurnsOutNotToBeAStop) {
  StopStringMatcher m({"STOP"}, false);
  EXPECT_EQ(m.push("a ST"), "a ");
  EXPECT_EQ(m.push("O"), "");
  EXPECT_EQ(m.push("P?"), "");
  EXPECT_TRUE(m.matched());
  StopStringMatcher n({"STOP"}, false);
  EXPECT_EQ(n.push("a ST"), "a ");
  EXPECT_EQ(n.push("OX"), "STOX");
  EXPECT_EQ(n.push("ST"), "");
  EXPECT_EQ(n.flush(), "ST");
  EXPECT_FALSE(n.matched());
}

TEST(StopStringMatcher, TheEarliestMatchWinsAndCanBeKeptInTheOutput) {
  StopStringMatcher m({"world", "lo w"}, true);
  EXPECT_EQ(m.push("hello world"), "hello w");
  EXPECT_EQ(m.matched_stop(), "lo w");
}

TEST(StopStringMatcher, MatchesAStopSpreadOverManySingleCharacterPieces) {
  StopStringMatcher m({"abcdef"}, false);
  std::string out;
  for (char c : std::string("xxabcdabcdefyy")) out += m.push(std::string(1, c));
  out += m.flush();
  EXPECT_EQ(out, "xxabcd");
  EXPECT_TRUE(m.matched());
}

TEST(StopStringMatcher, HoldsBackWholeMultibyteCharactersOnly) {
  StopStringMatcher m({"é!"}, false);
  EXPECT_EQ(m.push("café"), "caf");
  EXPECT_EQ(m.push("?"), "é?");
}

}  // namespace
}  // namespace pagedllm::server
