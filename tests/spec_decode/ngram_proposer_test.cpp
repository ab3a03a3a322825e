#include "spec_decode/ngram_proposer.h"

#include <gtest/gtest.h>

#include <random>

#include "spec_decode/replay_proposer.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

Ids propose(const Proposer& p, const Ids& tokens, int k) {
  Ids drafts;
  p.propose(tokens, k, drafts);
  return drafts;
}

TEST(NgramProposer, ProposesWhatFollowedTheLongestSuffixSeenBefore) {
  NgramProposer p(2, 4);
  // Suffix "1 2 3" occurred at the start, followed by 4 5 9.
  EXPECT_EQ(propose(p, {1, 2, 3, 4, 5, 9, 9, 1, 2, 3}, 3), (Ids{4, 5, 9}));
  // The 3-gram "6 1 2" occurred once, followed by 7; the 2-gram "1 2" more recently, by 8.
  EXPECT_EQ(propose(p, {6, 1, 2, 7, 0, 1, 2, 8, 6, 1, 2}, 1), (Ids{7}));
}

TEST(NgramProposer, TakesTheLatestOccurrenceAndStopsAtTheSequenceEnd) {
  NgramProposer p(2, 2);
  // "7 8" at 0 (then 1) and at 3 (then 2 7 8): the latest wins.
  EXPECT_EQ(propose(p, {7, 8, 1, 7, 8, 2, 7, 8}, 5), (Ids{2, 7, 8}));
  EXPECT_EQ(propose(p, {7, 8, 1, 7, 8, 2, 7, 8}, 2), (Ids{2, 7}));
}

TEST(NgramProposer, ProposesNothingWithoutAMatchOrRoom) {
  NgramProposer p(2, 4);
  EXPECT_TRUE(propose(p, {1, 2, 3, 4, 5}, 4).empty());
  EXPECT_TRUE(propose(p, {1, 2, 1, 2}, 0).empty());
  EXPECT_TRUE(propose(p, {5}, 4).empty());
  EXPECT_TRUE(propose(p, {}, 4).empty());
  // A 1-gram match is below min_n = 2.
  EXPECT_TRUE(propose(p, {3, 9, 4, 3}, 4).empty());
  EXPECT_EQ(propose(NgramProposer(1, 1), {3, 9, 4, 3}, 4), (Ids{9, 4, 3}));
}

// Against the definition, by brute force, on random sequences over small alphabets.
TEST(NgramProposer, AgreesWithABruteForceReadingOfTheRule) {
  std::mt19937 rng(3);
  NgramProposer p(2, 4);
  for (int trial = 0; trial < 3000; ++trial) {
    Ids t(1 + rng() % 40);
    for (auto& x : t) x = static_cast<int32_t>(rng() % 4);
    const int k = 1 + static_cast<int>(rng() % 6);
    Ids want;
    for (int n = std::min<int>(4, static_cast<int>(t.size()) - 1); n >= 2 && want.empty(); --n) {
      const Ids suffix(t.end() - n, t.end());
      for (int s = static_cast<int>(t.size()) - n - 1; s >= 0; --s) {
        if (!std::equal(suffix.begin(), suffix.end(), t.begin() + s)) continue;
        for (int j = s + n; j < static_cast<int>(t.size()) && static_cast<int>(want.size()) < k;
             ++j)
          want.push_back(t[static_cast<size_t>(j)]);
        break;
      }
    }
    EXPECT_EQ(propose(p, t, k), want);
  }
}

TEST(ReplayProposer, ProposesTheRecordedContinuationOfAPrefix) {
  ReplayProposer p({{1, 2, 3, 4, 5, 6}, {1, 9, 9}});
  EXPECT_EQ(propose(p, {1, 2, 3}, 2), (Ids{4, 5}));
  EXPECT_EQ(propose(p, {1, 9}, 4), (Ids{9}));
  EXPECT_TRUE(propose(p, {1, 2, 3, 4, 5, 6}, 4).empty());
  EXPECT_TRUE(propose(p, {2}, 4).empty());
}

}  // namespace
}  // namespace pagedllm
