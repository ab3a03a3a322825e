#include "sampling/candidates.h"

#include <algorithm>
#include <bit>
#include <optional>

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

// The quickselect that carries the mass, over items [lo, hi): reorders them so that [lo, n) is
// their shortest best-first prefix holding `need` (> 0), and returns n (hi, at least 1, when
// they fall short).
size_t select_prefix(std::span<WeightedId> items, size_t lo, size_t hi, double need) {
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

// Non-negative floats order as their bits, so the bits' top 11 (the exponent and 3 mantissa
// bits: an eighth of an octave) bucket the weights in order. Worked example, weights 0.9, 0.6,
// 0.3, 0.2 and mass 1.6: their buckets are [0.875, 0.9375), [0.5625, 0.625), [0.28125, 0.3125)
// and [0.1875, 0.203125); walking down, 0.9 + 0.6 = 1.5 falls short and 0.3's bucket reaches
// 1.8, so 0.9 and 0.6 are in the prefix and the quickselect runs on 0.3's bucket alone for the
// remaining 0.1: the prefix is 0.9, 0.6, 0.3, and 0.3 is its lightest.
constexpr int kBucketShift = 20;
constexpr size_t kBuckets = size_t{1} << (31 - kBucketShift);

uint32_t bucket_of(float weight) {
  return (std::bit_cast<uint32_t>(weight) & 0x7FFFFFFFu) >> kBucketShift;
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
  return select_prefix(items, 0, items.size(), mass);
}

std::optional<PrefixCut> heaviest_prefix_cut(std::span<const int32_t> ids,
                                             std::span<const float> weights, double mass) {
  if (ids.empty() || !(mass > 0.0)) return std::nullopt;
  // Two tables, for the even and the odd candidates: a run of candidates in one bucket then
  // makes two chains of dependent adds, not one.
  thread_local std::vector<double> tables;
  tables.assign(2 * kBuckets, 0.0);
  double* even = tables.data();
  double* odd = tables.data() + kBuckets;
  size_t k = 0;
  for (; k + 2 <= ids.size(); k += 2) {
    const float w0 = weights[static_cast<size_t>(ids[k])];
    const float w1 = weights[static_cast<size_t>(ids[k + 1])];
    even[bucket_of(w0)] += w0;
    odd[bucket_of(w1)] += w1;
  }
  if (k < ids.size()) {
    const float w = weights[static_cast<size_t>(ids[k])];
    even[bucket_of(w)] += w;
  }
  const auto bucket_mass = [&](size_t b) { return even[b] + odd[b]; };
  // Down the buckets to the one where the prefix ends; bucket 0 (zeros and denormals) is left
  // to heaviest_prefix, as is a mass out of reach.
  double heavier_mass = 0.0;
  size_t edge = kBuckets - 1;
  for (; edge > 0; --edge) {
    if (heavier_mass + bucket_mass(edge) >= mass) break;
    heavier_mass += bucket_mass(edge);
  }
  if (edge == 0) return std::nullopt;
  // That bucket's candidates, appended branch-free (the slot past the last takes the misses).
  thread_local std::vector<WeightedId> at_edge;
  at_edge.resize(ids.size() + 1);
  size_t n = 0;
  for (const int32_t id : ids) {
    const float w = weights[static_cast<size_t>(id)];
    at_edge[n] = {w, id};
    n += bucket_of(w) == edge;
  }
  if (n == 0) return std::nullopt;  // not with a finite mass that the walk reached
  const std::span<WeightedId> edge_items(at_edge.data(), n);
  const size_t kept = select_prefix(edge_items, 0, n, mass - heavier_mass);
  PrefixCut cut{edge_items[0], heavier_mass};
  for (size_t i = 0; i < kept; ++i) {
    if (heavier(cut.lightest, edge_items[i])) cut.lightest = edge_items[i];
    cut.total += edge_items[i].weight;
  }
  return cut;
}

int32_t draw_within_cut(std::span<const int32_t> ids, std::span<const float> weights,
                        const WeightedId& lightest, double target) {
  // Bitwise, not short-circuit: no branch for the compiler to make.
  const auto in = [&](int32_t id) {
    const float w = weights[static_cast<size_t>(id)];
    return (w > lightest.weight) | ((w == lightest.weight) & (id <= lightest.id));
  };
  // Whole blocks are passed by their sums (four chains of adds each), then the block where the
  // running weight passes target is walked one candidate at a time: one chain of dependent adds
  // over a whole flat row took about 0.2 ms.
  constexpr size_t kBlock = 64;
  double acc = 0.0;
  size_t start = 0;
  for (; start + kBlock <= ids.size(); start += kBlock) {
    double part[4] = {};
    for (size_t i = 0; i < kBlock; i += 4) {
      for (size_t j = 0; j < 4; ++j) {
        const int32_t id = ids[start + i + j];
        // Times 0 or 1 rather than a select, which g++ turned into a branch that a flat row
        // mispredicts.
        const double w = weights[static_cast<size_t>(id)];
        part[j] += w * static_cast<double>(in(id));
      }
    }
    const double block = (part[0] + part[1]) + (part[2] + part[3]);
    if (target < acc + block) break;
    acc += block;
  }
  for (size_t i = start; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (!in(id)) continue;
    acc += weights[static_cast<size_t>(id)];
    if (target < acc) return id;
  }
  // Rounding left target unreached (the blocks may all have passed): the last candidate in the
  // cut with a positive weight, as draw_by_weight.
  for (size_t i = ids.size(); i-- > 0;) {
    const int32_t id = ids[i];
    if (in(id) && weights[static_cast<size_t>(id)] > 0.0f) return id;
  }
  return ids.empty() ? lightest.id : ids.front();
}

double total_weight(std::span<const int32_t> ids, std::span<const float> weights) {
  double part[4] = {};  // four chains of adds, as draw_within_cut's blocks
  size_t i = 0;
  for (; i + 4 <= ids.size(); i += 4) {
    for (size_t j = 0; j < 4; ++j) part[j] += weights[static_cast<size_t>(ids[i + j])];
  }
  for (; i < ids.size(); ++i) part[0] += weights[static_cast<size_t>(ids[i])];
  return (part[0] + part[1]) + (part[2] + part[3]);
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
