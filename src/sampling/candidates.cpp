#include "sampling/candidates.h"

#include <algorithm>

#include "kernels/cpu/logits_row.h"

namespace pagedllm {

namespace {

// Small ranges are sorted outright: cheaper than more partitioning.
constexpr size_t kSortBelow = 32;

struct BestFirst {
  std::span<const float> v;
  bool operator()(int32_t a, int32_t b) const {
    const float va = v[static_cast<size_t>(a)], vb = v[static_cast<size_t>(b)];
    return va > vb || (va == vb && a < b);
  }
};

bool heavier(const WeightedId& a, const WeightedId& b) {
  return a.weight > b.weight || (a.weight == b.weight && a.id < b.id);
}

// Moves the median of the first, middle and last items of [lo, hi) to lo.
void median_of_three_to_front(std::span<WeightedId> items, size_t lo, size_t hi) {
  const size_t mid = lo + (hi - lo) / 2, last = hi - 1;
  if (heavier(items[mid], items[lo])) std::swap(items[mid], items[lo]);
  if (heavier(items[last], items[lo])) std::swap(items[last], items[lo]);
  if (heavier(items[last], items[mid])) std::swap(items[last], items[mid]);
  std::swap(items[lo], items[mid]);
}

}  // namespace

void top_k_ids(std::span<const float> values, size_t k, std::vector<int32_t>& ids) {
  ids.clear();
  if (k == 0) return;
  const BestFirst before{values};
  // A heap whose front is the worst of the k kept (std heaps put the "largest" first, so the
  // comparison is BestFirst itself: the best compare as smallest).
  for (size_t i = 0; i < k; ++i) ids.push_back(static_cast<int32_t>(i));
  std::make_heap(ids.begin(), ids.end(), before);
  const auto n = static_cast<int64_t>(values.size());
  // Later ids lose ties, so only values strictly above the worst kept can enter.
  for (int64_t i = static_cast<int64_t>(k); i < n; ++i) {
    const float worst = values[static_cast<size_t>(ids.front())];
    i += cpu::first_above(values.data() + i, n - i, worst);
    if (i >= n) break;
    std::pop_heap(ids.begin(), ids.end(), before);
    ids.back() = static_cast<int32_t>(i);
    std::push_heap(ids.begin(), ids.end(), before);
  }
  std::sort(ids.begin(), ids.end(), before);
}

size_t heaviest_prefix(std::span<WeightedId> items, double mass) {
  if (items.empty()) return 0;
  if (mass <= 0.0) {  // the heaviest alone
    std::iter_swap(items.begin(), std::min_element(items.begin(), items.end(), heavier));
    return 1;
  }
  size_t lo = 0, hi = items.size();
  double need = mass;
  while (hi - lo > kSortBelow) {
    median_of_three_to_front(items, lo, hi);
    const WeightedId pivot = items[lo];
    double better = 0.0;  // the weight that moves before the pivot
    size_t at = lo + 1;
    for (size_t i = lo + 1; i < hi; ++i) {
      if (heavier(items[i], pivot)) {
        better += items[i].weight;
        std::swap(items[i], items[at++]);
      }
    }
    std::swap(items[lo], items[at - 1]);  // the pivot to its place, after the better ones
    const size_t pivot_at = at - 1;
    if (better >= need) {
      hi = pivot_at;  // the prefix ends among the better ones
      continue;
    }
    need -= better + pivot.weight;
    if (need <= 0.0) return pivot_at + 1;
    lo = pivot_at + 1;
  }
  std::sort(items.begin() + static_cast<std::ptrdiff_t>(lo),
            items.begin() + static_cast<std::ptrdiff_t>(hi), heavier);
  for (size_t i = lo; i < hi; ++i) {
    need -= items[i].weight;
    if (need <= 0.0) return i + 1;
  }
  return std::max<size_t>(hi, 1);
}

int32_t draw_by_weight(std::span<const WeightedId> items, double target) {
  double acc = 0.0;
  int32_t last_positive = items.empty() ? 0 : items[0].id;
  for (const WeightedId& item : items) {
    if (item.weight <= 0.0f) continue;
    acc += item.weight;
    if (target < acc) return item.id;
    last_positive = item.id;
  }
  return last_positive;
}

}  // namespace pagedllm
