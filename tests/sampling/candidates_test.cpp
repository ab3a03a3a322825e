// The sampler's candidate selection against sorting: the same top k, the same top-p prefix, on
// random rows full of ties, and a draw that follows the weights.
#include "sampling/candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
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
