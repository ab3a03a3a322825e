// The q8_0 KV cache (--kv-cache-dtype q8_0, llama.cpp's -ctk/-ctv q8_0): what reshape_and_cache
// stores, and what paged attention computes from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "format/dequant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/isa_guard.h"

namespace pagedllm {
namespace {

// The value a q8_0 cache holds for K or V element (b, h, d, offset): code times scale.
float stored_key(const KVCacheLayer& l, int64_t b, int h, int d, int offset) {
  const int8_t code = static_cast<const int8_t*>(l.key)[l.key_index(b, h, d, offset)];
  return static_cast<float>(code) *
         f16_to_f32(l.key_scale[l.key_scale_index(b, h, d / KVCacheSpec::kQ8Group, offset)]);
}
float stored_value(const KVCacheLayer& l, int64_t b, int h, int d, int offset) {
  const int8_t code = static_cast<const int8_t*>(l.value)[l.value_index(b, h, d, offset)];
  return static_cast<float>(code) *
         f16_to_f32(l.value_scale[l.value_scale_index(b, h, offset, d / KVCacheSpec::kQ8Group)]);
}

// Worked example, one token, head size 40 (a group of 32 and a short one of 8):
//   group 0: x[i] = i - 16, amax 16, scale 16 / 127, so x[i] / scale = 7.9375 (i - 16): codes
//            -127 at i = 0, 0 at i = 16, 8 at i = 17 (7.94), 119 at i = 31 (119.06);
//   group 1: x = {0.6, -0.25, 0, 0, 0, 0, 0, 1}, amax 1, scale 1 / 127: codes 76 (76.2),
//            -32 (-31.75), 0, ..., 127.
// Each scale is stored as an f16. V holds the same vector reversed (checked through its values).
TEST(Q8KvCache, StoresLlamaCppsQ8_0CodesAndScales) {
  const int D = 40;
  PagedKVCache cache(KVCacheSpec{1, 2, 16, 1, D, DType::kQ8_0});
  std::vector<float> k(D, 0.0f);
  for (int i = 0; i < 32; ++i) k[static_cast<size_t>(i)] = static_cast<float>(i - 16);
  const float group1[8] = {0.6f, -0.25f, 0, 0, 0, 0, 0, 1.0f};
  std::copy(group1, group1 + 8, k.begin() + 32);
  std::vector<float> v = k;
  std::reverse(v.begin(), v.end());
  const std::vector<int64_t> slot = {16 + 5};  // block 1, offset 5
  const KVCacheLayer l = cache.layer(0);
  cpu::reshape_and_cache(k.data(), v.data(), slot, l);
  const auto key_code = [&](int d) {
    return static_cast<const int8_t*>(l.key)[l.key_index(1, 0, d, 5)];
  };
  EXPECT_EQ(key_code(0), -127);
  EXPECT_EQ(key_code(16), 0);
  EXPECT_EQ(key_code(17), 8);
  EXPECT_EQ(key_code(31), 119);
  EXPECT_EQ(key_code(32), 76);
  EXPECT_EQ(key_code(33), -32);
  EXPECT_EQ(key_code(34), 0);
  EXPECT_EQ(key_code(39), 127);
  EXPECT_EQ(l.key_scale[l.key_scale_index(1, 0, 0, 5)], f32_to_f16(16.0f / 127.0f));
  EXPECT_EQ(l.key_scale[l.key_scale_index(1, 0, 1, 5)], f32_to_f16(1.0f / 127.0f));
  for (int d = 0; d < D; ++d) {
    const float scale = f16_to_f32(l.value_scale[l.value_scale_index(1, 0, 5, d / 32)]);
    EXPECT_NEAR(stored_value(l, 1, 0, d, 5), v[static_cast<size_t>(d)], scale * 0.5f + 1e-6f)
        << "d " << d;
  }
}

// With amax 127 the scale is exactly 1, so codes are the values rounded: ties go to even (2.5 ->
// 2, 3.5 -> 4, -2.5 -> -2), the rest to nearest; a NaN element gives -127 and leaves the group's
// other codes alone.
TEST(Q8KvCache, CodesRoundToNearestWithTiesToEven) {
  const int D = 32;
  PagedKVCache cache(KVCacheSpec{1, 2, 16, 1, D, DType::kQ8_0});
  std::vector<float> k(D, 0.0f);
  k[0] = 127.0f;
  k[1] = 2.5f;
  k[2] = 3.5f;
  k[3] = -2.5f;
  k[4] = 2.49f;
  k[5] = -126.6f;
  std::vector<float> v = k;
  v[6] = std::nanf("");
  const KVCacheLayer l = cache.layer(0);
  cpu::reshape_and_cache(k.data(), v.data(), std::vector<int64_t>{16}, l);
  const int8_t want[7] = {127, 2, 4, -2, 2, -127, 0};
  for (int d = 0; d < 7; ++d) {
    EXPECT_EQ(static_cast<const int8_t*>(l.key)[l.key_index(1, 0, d, 0)], want[d]) << "d " << d;
  }
  EXPECT_EQ(f16_to_f32(l.key_scale[l.key_scale_index(1, 0, 0, 0)]), 1.0f);
  const int8_t* value_codes = static_cast<const int8_t*>(l.value) + l.value_index(1, 0, 0, 0);
  EXPECT_EQ(value_codes[1], 2);
  EXPECT_EQ(value_codes[2], 4);
  EXPECT_EQ(value_codes[6], -127);
}

// Every ISA path stores the portable path's bytes (codes and scales), for head sizes with short
// last groups (8, 40, 17: a group of 1) and values that stress the edges: ties, NaN, infinities,
// an all-zero group and a group whose largest magnitude is negative.
TEST(Q8KvCache, EveryIsaPathStoresThePortableBytes) {
  test::IsaGuard guard;
  int compared = 0;
  for (int D : {8, 17, 40, 64}) {
    const int heads = 2, block = 4, tokens = 9;
    std::mt19937 rng(static_cast<unsigned>(D));
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> k(static_cast<size_t>(tokens) * heads * D), v(k.size());
    for (auto& x : k) x = normal(rng);
    for (auto& x : v) x = normal(rng);
    k[1] = 2.5f * (k[0] = 127.0f) / 127.0f;
    k[2] = std::nanf("");
    v[3] = INFINITY;
    v[static_cast<size_t>(D)] = -1000.0f;
    for (int d = 0; d < std::min(D, 32); ++d) k[static_cast<size_t>(2 * D + d)] = 0.0f;
    std::vector<int64_t> slots;
    for (int t = 0; t < tokens; ++t) slots.push_back(3 + 2 * t);
    const auto store = [&](cpu::Isa isa) {
      cpu::set_isa(isa);
      auto cache = std::make_unique<PagedKVCache>(KVCacheSpec{1, 6, block, heads, D, DType::kQ8_0});
      cpu::reshape_and_cache(k.data(), v.data(), slots, cache->layer(0));
      return cache;
    };
    const auto ref = store(cpu::Isa::kGeneric);
    const KVCacheLayer r = ref->layer(0);
    const size_t codes = static_cast<size_t>(6) * block * heads * D;
    const size_t scales = static_cast<size_t>(6) * block * heads * ((D + 31) / 32);
    for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
      if (!cpu::cpu_supports(isa)) continue;
      const auto got = store(isa);
      const KVCacheLayer g = got->layer(0);
      ASSERT_EQ(std::memcmp(g.key, r.key, codes), 0) << cpu::to_string(isa) << " D " << D;
      ASSERT_EQ(std::memcmp(g.value, r.value, codes), 0) << cpu::to_string(isa) << " D " << D;
      ASSERT_EQ(std::memcmp(g.key_scale, r.key_scale, scales * 2), 0) << cpu::to_string(isa);
      ASSERT_EQ(std::memcmp(g.value_scale, r.value_scale, scales * 2), 0) << cpu::to_string(isa);
      ++compared;
    }
  }
  if (cpu::cpu_supports(cpu::Isa::kAvx512)) {
    EXPECT_EQ(compared, 8);
  }
}

// Random tokens at shuffled slots (with padding): every value lands at its slot within half a
// quantization step of its group, every other slot stays zero; 41 tokens, so the stores run
// split over the threads.
TEST(Q8KvCache, EachTokenLandsAtItsSlotOnlyWithinHalfAStep) {
  const int D = 48, heads = 2, block = 4, num_blocks = 16;
  std::vector<int64_t> slots;
  for (int64_t s = 4; s < 64; ++s) slots.push_back(s);
  std::mt19937 rng(9);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(41);
  slots[7] = -1;
  const int tokens = static_cast<int>(slots.size());
  PagedKVCache cache(KVCacheSpec{1, num_blocks, block, heads, D, DType::kQ8_0});
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> k(static_cast<size_t>(tokens * heads * D)), v(k.size());
  for (auto* t : {&k, &v}) {
    for (float& x : *t) x = n(rng);
  }
  const KVCacheLayer l = cache.layer(0);
  cpu::reshape_and_cache(k.data(), v.data(), slots, l);
  std::vector<bool> used(static_cast<size_t>(num_blocks * block), false);
  for (int t = 0; t < tokens; ++t) {
    const int64_t slot = slots[static_cast<size_t>(t)];
    if (slot < 0) continue;
    used[static_cast<size_t>(slot)] = true;
    for (int h = 0; h < heads; ++h) {
      for (int g = 0; g * 32 < D; ++g) {
        const int end = std::min(D, 32 * g + 32);
        const size_t row = static_cast<size_t>((t * heads + h) * D);
        float k_amax = 0, v_amax = 0;
        for (int d = 32 * g; d < end; ++d) {
          k_amax = std::max(k_amax, std::fabs(k[row + static_cast<size_t>(d)]));
          v_amax = std::max(v_amax, std::fabs(v[row + static_cast<size_t>(d)]));
        }
        for (int d = 32 * g; d < end; ++d) {
          // Half a step of 1/127 of the group's amax, plus the f16 scale's rounding (2^-11).
          EXPECT_NEAR(stored_key(l, slot / block, h, d, slot % block),
                      k[row + static_cast<size_t>(d)], k_amax * (0.5f / 127 + 1.0f / 2048));
          EXPECT_NEAR(stored_value(l, slot / block, h, d, slot % block),
                      v[row + static_cast<size_t>(d)], v_amax * (0.5f / 127 + 1.0f / 2048));
        }
      }
    }
  }
  for (int64_t slot = 0; slot < num_blocks * block; ++slot) {
    if (used[static_cast<size_t>(slot)]) continue;
    for (int h = 0; h < heads; ++h) {
      for (int d = 0; d < D; ++d) {
        ASSERT_EQ(stored_key(l, slot / block, h, d, slot % block), 0.0f) << "slot " << slot;
        ASSERT_EQ(stored_value(l, slot / block, h, d, slot % block), 0.0f) << "slot " << slot;
      }
    }
  }
}

// Causal attention of one request through scattered blocks of 16 (chunks read in place) and of
// 3 (chunks copied): the output equals f64 attention over the values the cache holds, and is
// close to attention over the unquantized values.
TEST(Q8KvCache, AttentionComputesWithTheStoredValues) {
  const int D = 64, len = 45, heads = 2;
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(len * heads * D)), k(static_cast<size_t>(len * D)),
      v(k.size());
  for (auto* t : {&q, &k, &v}) {
    for (float& x : *t) x = n(rng);
  }
  for (int block : {16, 3}) {
    const int nblocks = (len + block - 1) / block;
    PagedKVCache cache(KVCacheSpec{1, nblocks + 1, block, 1, D, DType::kQ8_0});
    std::vector<int32_t> table(static_cast<size_t>(nblocks));
    for (int b = 0; b < nblocks; ++b) table[static_cast<size_t>(b)] = nblocks - b;
    std::vector<int64_t> slots;
    std::vector<int32_t> positions;
    for (int p = 0; p < len; ++p) {
      slots.push_back(int64_t{table[static_cast<size_t>(p / block)]} * block + p % block);
      positions.push_back(p);
    }
    const KVCacheLayer l = cache.layer(0);
    cpu::reshape_and_cache(k.data(), v.data(), slots, l);
    std::vector<float> kq(k.size()), vq(v.size());  // what the cache holds
    for (int p = 0; p < len; ++p) {
      const int64_t b = table[static_cast<size_t>(p / block)];
      for (int d = 0; d < D; ++d) {
        kq[static_cast<size_t>(p * D + d)] = stored_key(l, b, 0, d, p % block);
        vq[static_cast<size_t>(p * D + d)] = stored_value(l, b, 0, d, p % block);
      }
    }
    const std::vector<int32_t> qsl = {0, len};
    std::vector<float> out(q.size());
    cpu::AttentionBatch batch{1, qsl, positions, table, nblocks};
    cpu::paged_attention(q.data(), heads, batch, l, out.data());
    double worst_exact = 0, worst_original = 0;
    for (int p = 0; p < len; ++p) {
      for (int h = 0; h < heads; ++h) {
        const size_t at = static_cast<size_t>((p * heads + h) * D);
        std::vector<double> s(static_cast<size_t>(p + 1)), s0(s.size());
        double m = -1e300, m0 = -1e300;
        for (int j = 0; j <= p; ++j) {
          double dot = 0, dot0 = 0;
          for (int d = 0; d < D; ++d) {
            dot += double{q[at + static_cast<size_t>(d)]} * kq[static_cast<size_t>(j * D + d)];
            dot0 += double{q[at + static_cast<size_t>(d)]} * k[static_cast<size_t>(j * D + d)];
          }
          s[static_cast<size_t>(j)] = dot / 8.0;  // sqrt(64)
          s0[static_cast<size_t>(j)] = dot0 / 8.0;
          m = std::max(m, s[static_cast<size_t>(j)]);
          m0 = std::max(m0, s0[static_cast<size_t>(j)]);
        }
        double sum = 0, sum0 = 0;
        for (int j = 0; j <= p; ++j) {
          sum += s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - m);
          sum0 += s0[static_cast<size_t>(j)] = std::exp(s0[static_cast<size_t>(j)] - m0);
        }
        for (int d = 0; d < D; ++d) {
          double ref = 0, ref0 = 0;
          for (int j = 0; j <= p; ++j) {
            ref += s[static_cast<size_t>(j)] / sum * vq[static_cast<size_t>(j * D + d)];
            ref0 += s0[static_cast<size_t>(j)] / sum0 * v[static_cast<size_t>(j * D + d)];
          }
          const double got = out[at + static_cast<size_t>(d)];
          worst_exact = std::max(worst_exact, std::fabs(got - ref));
          worst_original = std::max(worst_original, std::fabs(got - ref0));
        }
      }
    }
    EXPECT_LT(worst_exact, 2e-5) << "block " << block;
    EXPECT_LT(worst_original, 0.05) << "block " << block;
    EXPECT_GT(worst_original, 1e-4) << "block " << block << ": the values were not quantized";
  }
}

TEST(Q8KvCache, NeedsTheCpuLayout) {
  EXPECT_THROW(PagedKVCache(KVCacheSpec{1, 4, 16, 1, 64, DType::kQ8_0, KVLayout::kVllmV1}),
               std::invalid_argument);
}

// 34 bytes per 32 elements (codes and an f16 scale), as llama.cpp's block_q8_0; a short last
// group has a scale of its own.
TEST(Q8KvCache, BlockBytesAreCodesPlusOneF16ScalePerGroup) {
  const KVCacheSpec head64{2, 10, 16, 4, 64, DType::kQ8_0};
  EXPECT_EQ(head64.bytes_per_block(), 2 * 2 * 4 * 16 * (64 + 2 * 2));
  const KVCacheSpec head40{1, 10, 16, 1, 40, DType::kQ8_0};
  EXPECT_EQ(head40.bytes_per_block(), 2 * 16 * (40 + 2 * 2));
  const KVCacheSpec f32{2, 10, 16, 4, 64, DType::kF32};
  EXPECT_EQ(f32.bytes_per_block(), 2 * 2 * 4 * 16 * 64 * 4);
}

}  // namespace
}  // namespace pagedllm
