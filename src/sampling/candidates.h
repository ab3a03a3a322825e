// Choosing among a vocabulary's tokens without sorting all of them: the k best by value, the
// shortest best-first prefix that holds a given mass, and a draw in proportion to weight.
// "Best first" is the order the sampler has always used: the larger value, then the lower id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace pagedllm {

// The k best ids of `values` (k <= values.size()), best first. A heap of the k best so far,
// fed only by the values a vectorized scan finds above its worst: O(n) plus O(k log k) in
// practice, where a partial sort compares every value with the heap.
void top_k_ids(std::span<const float> values, size_t k, std::vector<int32_t>& ids);

struct WeightedId {
  float weight;
  int32_t id;
};

// Reorders `items` (non-negative weights) so that its first n entries are the shortest
// best-first prefix (by weight, ties to the lower id) whose weights add up to at least `mass`,
// and returns n: all of them when their weights fall short, and at least one when there are
// any. A quickselect that carries the mass: O(items) on average, sorting only the last few.
size_t heaviest_prefix(std::span<WeightedId> items, double mass);

// The same prefix of many candidates without moving them: `ids` index `weights` (non-negative),
// and the prefix is every candidate at least as good as `lightest` (a heavier weight, or the
// same weight and an id not above), `total` their weight. One pass sums the weights per bucket
// of their float bits, the walk down the buckets finds the one where the prefix ends, and the
// quickselect runs on that bucket's candidates alone (a flat 151,936-entry row: about 1.3 ms
// per top-p draw through heaviest_prefix, bench_sampler). Nothing where the mass is out of
// reach or the prefix ends among zeros and denormals: heaviest_prefix handles those.
struct PrefixCut {
  WeightedId lightest;
  double total = 0.0;
};
std::optional<PrefixCut> heaviest_prefix_cut(std::span<const int32_t> ids,
                                             std::span<const float> weights, double mass);

// draw_by_weight over the candidates within a cut, in the order of `ids`.
int32_t draw_within_cut(std::span<const int32_t> ids, std::span<const float> weights,
                        const WeightedId& lightest, double target);

// The cut that holds every candidate (min-p alone), and the candidates' total weight.
inline constexpr WeightedId kEveryCandidate{-std::numeric_limits<float>::infinity(),
                                            std::numeric_limits<int32_t>::max()};
double total_weight(std::span<const int32_t> ids, std::span<const float> weights);

// The id of the first item (in their order) whose running weight exceeds `target`; when
// rounding leaves target unreached, the last one with a positive weight.
int32_t draw_by_weight(std::span<const WeightedId> items, double target);

}  // namespace pagedllm
