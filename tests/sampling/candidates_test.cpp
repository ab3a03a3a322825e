// The sampler's candidate selection against sorting: the same top k, the same top-p prefix, on
// random rows full of ties, and a draw that follows the weights.
#include "sampling/candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>

namespace pagedllm {
namespace {

// Values drawn from a few levels, so that ties are common.
std::vector<float> tied_values(size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  const int levels = 1 + static_cast<int>(rng() % 40);
  for (float& x : v) x = static_cast<float>(rng() % static_cast<uint32_t>(levels)) * 0.25f;
  return v;
}

std::vector<int32_t> sorted_best_first(const std::vector<float>& v) {
  std::vector<int32_t> ids(v.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)];
  });
  return ids;
}

TEST(Candidates, TopKIdsAreThePartialSortOnRandomRowsWithTies) {
  std::mt19937 rng(3);
  std::vector<int32_t> ids;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 3000;
    const std::vector<float> v = tied_values(n, rng);
    const size_t k = 1 + rng() % std::min<size_t>(n, 200);
    top_k_ids(v, k, ids);
    std::vector<int32_t> want = sorted_best_first(v);
    want.resize(k);
    ASSERT_EQ(ids, want) << "trial " << trial << " n " << n << " k " << k;
  }
}

TEST(Candidates, HeaviestPrefixIsTheShortestSortedPrefixReachingTheMass) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 5000;
    std::vector<float> w = tied_values(n, rng);
    for (float& x : w) x = std::exp(x);  // positive weights, still tied
    const std::vector<int32_t> order = sorted_best_first(w);
    double total = 0.0;
    for (float x : w) total += x;
    const double share = std::uniform_real_distribution<double>(0.01, 1.0)(rng);
    size_t want = 0;
    double acc = 0.0;
    while (want < n) {
      acc += w[static_cast<size_t>(order[want++])];
      if (acc >= share * total) break;
    }
    std::vector<WeightedId> items(n);
    for (size_t i = 0; i < n; ++i) items[i] = {w[i], static_cast<int32_t>(i)};
    std::shuffle(items.begin(), items.end(), rng);
    const size_t got = heaviest_prefix(items, share * total);
    ASSERT_EQ(got, want) << "trial " << trial;
    std::vector<int32_t> kept;
    for (size_t i = 0; i < got; ++i) kept.push_back(items[i].id);
    std::sort(kept.begin(), kept.end());
    std::vector<int32_t> expected(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(want));
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(kept, expected) << "trial " << trial;
  }
}

// The shortest best-first prefix of `w` reaching `mass`, by sorting: its length and its ids.
std::pair<size_t, std::vector<int32_t>> sorted_prefix(const std::vector<float>& w, double mass) {
  const std::vector<int32_t> order = sorted_best_first(w);
  size_t n = 0;
  double acc = 0.0;
  while (n < w.size()) {
    acc += w[static_cast<size_t>(order[n++])];
    if (acc >= mass) break;
  }
  std::vector<int32_t> ids(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n));
  std::sort(ids.begin(), ids.end());
  return {n, ids};
}

// A sampler's weights exp(l - max) over normal logits, flat (spread 0.5) or peaked (3), with
// runs of equal weights (an eighth of them 0.25: a bucket of many ties) and zeros.
std::vector<float> vocabulary_weights(size_t n, float spread, std::mt19937& rng) {
  std::normal_distribution<float> logit(0.0f, spread);
  std::vector<float> w(n);
  for (float& x : w) x = std::exp(logit(rng) - 4.0f * spread);
  for (size_t i = 0; i < n / 8; ++i) w[rng() % n] = 0.25f;
  for (size_t i = 0; i < n / 64; ++i) w[rng() % n] = 0.0f;
  return w;
}

TEST(Candidates, HeaviestPrefixOnVocabularySizedRowsIsTheSortedPrefix) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 8; ++trial) {
    const size_t n = 4096 + rng() % 160000;
    const std::vector<float> w = vocabulary_weights(n, trial % 2 == 0 ? 0.5f : 3.0f, rng);
    double total = 0.0;
    for (float x : w) total += x;
    for (double share : {0.05, 0.9}) {
      const auto [want, expected] = sorted_prefix(w, share * total);
      std::vector<WeightedId> items(n);
      for (size_t i = 0; i < n; ++i) items[i] = {w[i], static_cast<int32_t>(i)};
      std::shuffle(items.begin(), items.end(), rng);
      const size_t got = heaviest_prefix(items, share * total);
      ASSERT_EQ(got, want) << "trial " << trial << " share " << share;
      std::vector<int32_t> kept;
      for (size_t i = 0; i < got; ++i) kept.push_back(items[i].id);
      std::sort(kept.begin(), kept.end());
      ASSERT_EQ(kept, expected) << "trial " << trial << " share " << share;
    }
  }
}

// The cut over candidate ids (every other id of the row, as the sampler passes those above its
// floor) holds exactly the sorted prefix of those candidates, and its total is their weight.
TEST(Candidates, HeaviestPrefixCutHoldsTheSortedPrefixOfTheCandidates) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 12; ++trial) {
    const size_t n = 8192 + rng() % 300000;
    const std::vector<float> row = vocabulary_weights(n, trial % 2 == 0 ? 0.5f : 3.0f, rng);
    std::vector<int32_t> ids;
    std::vector<float> w;  // the candidates' weights, in ids' order
    for (size_t i = trial % 2; i < n; i += 2) {
      ids.push_back(static_cast<int32_t>(i));
      w.push_back(row[i]);
    }
    double total = 0.0;
    for (float x : w) total += x;
    for (double share : {0.01, 0.3, 0.9, 0.99}) {
      const auto [want, positions] = sorted_prefix(w, share * total);
      const std::optional<PrefixCut> cut = heaviest_prefix_cut(ids, row, share * total);
      ASSERT_TRUE(cut.has_value()) << "trial " << trial << " share " << share;
      std::vector<int32_t> in_cut;
      double kept_weight = 0.0;
      for (const int32_t id : ids) {
        const float x = row[static_cast<size_t>(id)];
        if (x > cut->lightest.weight || (x == cut->lightest.weight && id <= cut->lightest.id)) {
          in_cut.push_back(id);
          kept_weight += x;
        }
      }
      std::vector<int32_t> expected;
      for (const int32_t at : positions) expected.push_back(ids[static_cast<size_t>(at)]);
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(in_cut, expected) << "trial " << trial << " share " << share;
      EXPECT_NEAR(cut->total, kept_weight, 1e-9 * kept_weight);
    }
  }
}

TEST(Candidates, HeaviestPrefixCutLeavesMassesOutOfReachToHeaviestPrefix) {
  const std::vector<float> row(5000, 0.5f);
  std::vector<int32_t> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  EXPECT_FALSE(heaviest_prefix_cut(ids, row, 2501.0).has_value());
  const std::optional<PrefixCut> cut = heaviest_prefix_cut(ids, row, 10.0);
  ASSERT_TRUE(cut.has_value());  // 20 of the ties, the lowest ids
  EXPECT_EQ(cut->lightest.id, 19);
  EXPECT_DOUBLE_EQ(cut->total, 10.0);
}

TEST(Candidates, DrawWithinCutFollowsTheRunningSumOfTheCandidatesInIt) {
  const std::vector<float> row = {0.5f, 2.0f, 0.25f, 1.0f, 2.0f, 0.0f};
  const std::vector<int32_t> ids = {0, 1, 2, 3, 4, 5};
  const WeightedId lightest{1.0f, 3};  // the cut: ids 1, 3, 4 (2 + 1 + 2)
  EXPECT_EQ(draw_within_cut(ids, row, lightest, 0.0), 1);
  EXPECT_EQ(draw_within_cut(ids, row, lightest, 1.999), 1);
  EXPECT_EQ(draw_within_cut(ids, row, lightest, 2.0), 3);
  EXPECT_EQ(draw_within_cut(ids, row, lightest, 3.5), 4);
  EXPECT_EQ(draw_within_cut(ids, row, lightest, 5.0), 4);  // past the end: the last positive
  EXPECT_EQ(draw_within_cut(ids, row, WeightedId{2.0f, 1}, 2.5), 1);  // ties: id 4 is out
}

// Past the total by rounding, with every candidate in whole blocks that all pass: the last
// positive candidate in the cut, never an id from outside the row.
TEST(Candidates, DrawWithinCutPastTheTotalGivesTheLastPositiveCandidate) {
  std::vector<float> row(128, 1.0f);
  row[127] = 0.0f;
  row[126] = 0.5f;
  std::vector<int32_t> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  EXPECT_EQ(draw_within_cut(ids, row, kEveryCandidate, 1e9), 126);
  EXPECT_EQ(draw_within_cut(ids, row, WeightedId{1.0f, 99}, 1e9), 99);
  EXPECT_DOUBLE_EQ(total_weight(ids, row), 126.5);
}

TEST(Candidates, HeaviestPrefixKeepsEverythingWhenTheMassIsOutOfReachAndOneForNone) {
  std::vector<WeightedId> items = {{1.0f, 4}, {3.0f, 9}, {2.0f, 1}};
  EXPECT_EQ(heaviest_prefix(items, 100.0), 3u);
  EXPECT_EQ(heaviest_prefix(items, 0.0), 1u);
  EXPECT_EQ(items[0].id, 9);
  EXPECT_EQ(heaviest_prefix(std::span<WeightedId>(), 1.0), 0u);
}

TEST(Candidates, DrawByWeightFollowsTheRunningSumAndSkipsZeroWeights) {
  const std::vector<WeightedId> items = {{0.0f, 7}, {1.0f, 2}, {0.0f, 8}, {3.0f, 5}};
  EXPECT_EQ(draw_by_weight(items, 0.0), 2);
  EXPECT_EQ(draw_by_weight(items, 0.999), 2);
  EXPECT_EQ(draw_by_weight(items, 1.0), 5);
  EXPECT_EQ(draw_by_weight(items, 3.999), 5);
  EXPECT_EQ(draw_by_weight(items, 4.0), 5);  // past the end by rounding: the last positive
}

}  // namespace
}  // namespace pagedllm
