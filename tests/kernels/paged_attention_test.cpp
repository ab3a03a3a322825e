#include "kernels/cpu/paged_attention.h"
#include "kernels/isa_guard.h"

#include "format/dequant.h"
#include "kernels/cpu/cpu_features.h"

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

namespace pagedllm {
namespace {

// Plain attention over contiguous K/V for one head, as the reference.
std::vector<float> dense_attention(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, int len, int D) {
  std::vector<double> scores(static_cast<size_t>(len));
  double max = -1e300;
  for (int j = 0; j < len; ++j) {
    double s = 0;
    for (int d = 0; d < D; ++d) s += q[static_cast<size_t>(d)] * k[static_cast<size_t>(j * D + d)];
    scores[static_cast<size_t>(j)] = s / std::sqrt(static_cast<double>(D));
    max = std::max(max, scores[static_cast<size_t>(j)]);
  }
  double sum = 0;
  for (double& s : scores) sum += s = std::exp(s - max);
  std::vector<float> out(static_cast<size_t>(D), 0.0f);
  for (int j = 0; j < len; ++j) {
    for (int d = 0; d < D; ++d) {
      out[static_cast<size_t>(d)] += static_cast<float>(scores[static_cast<size_t>(j)] / sum *
                                                        v[static_cast<size_t>(j * D + d)]);
    }
  }
  return out;
}

class PagedAttention : public ::testing::TestWithParam<std::tuple<DType, KVLayout>> {};

// One request, one kv head, scattered blocks: the paged kernel equals dense attention over
// positions 0..p for every query position p; bf16 storage within bf16 rounding.
TEST_P(PagedAttention, MatchesDenseCausalAttentionThroughScatteredBlocks) {
  const int D = 16, block = 4, len = 23;
  const DType dtype = std::get<0>(GetParam());
  KVCacheSpec spec{1, 16, block, 1, D, dtype, std::get<1>(GetParam())};
  PagedKVCache cache(spec);
  const std::vector<int32_t> blocks = {9, 3, 14, 1, 7, 11};  // logical -> physical
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(len * D)), k(q.size()), v(q.size());
  for (auto* t : {&q, &k, &v}) {
    for (float& x : *t) x = n(rng);
  }
  std::vector<int64_t> slots;
  std::vector<int32_t> positions;
  for (int p = 0; p < len; ++p) {
    slots.push_back(int64_t{blocks[static_cast<size_t>(p / block)]} * block + p % block);
    positions.push_back(p);
  }
  slots.push_back(-1);  // a padding token writes nowhere
  std::vector<float> k_pad = k, v_pad = v;
  k_pad.resize(k.size() + D, 1e9f);
  v_pad.resize(v.size() + D, 1e9f);
  cpu::reshape_and_cache(k_pad.data(), v_pad.data(), slots, cache.layer(0));
  const std::vector<int32_t> qsl = {0, len};
  std::vector<float> out(q.size());
  cpu::AttentionBatch batch{1, qsl, positions, blocks, static_cast<int>(blocks.size())};
  cpu::paged_attention(q.data(), 1, batch, cache.layer(0), out.data());
  // fp8 E4M3 keeps 3 mantissa bits: each K and V within 1/16 of itself.
  const double tol = dtype == DType::kBF16 ? 2e-2 : dtype == DType::kF8E4M3 ? 0.15 : 1e-5;
  for (int p = 0; p < len; ++p) {
    const std::vector<float> qp(q.begin() + p * D, q.begin() + (p + 1) * D);
    const auto ref = dense_attention(qp, k, v, p + 1, D);
    for (int d = 0; d < D; ++d) {
      EXPECT_NEAR(out[static_cast<size_t>(p * D + d)], ref[static_cast<size_t>(d)], tol)
          << "position " << p;
    }
  }
}

// Every token's K and V land at its slot (the layout's index for each head and d), rounded to
// the cache's dtype; a padding token (-1) and all other slots stay untouched. 41 tokens, so the
// store runs split over the threads.
// Stores random K/V for one token per slot (-1: a padding token, stored nowhere) and checks
// that each token's values, and nothing else, landed at its slot.
// fused: K and V are read in place from rows laid out as a fused qkv projection writes them
// (q, k, v side by side, reshape_and_cache's row_stride), rather than from packed rows.
void ExpectEachTokenStoredAtItsSlotOnly(const std::vector<int64_t>& slots, DType dtype,
                                        KVLayout layout, bool fused = false, int D = 16,
                                        int block = 4) {
  const int heads = 2, num_blocks = 16;
  const int tokens = static_cast<int>(slots.size());
  const int padding = static_cast<int>(std::count(slots.begin(), slots.end(), int64_t{-1}));
  KVCacheSpec spec{1, num_blocks, block, heads, D, dtype, layout};
  PagedKVCache cache(spec);
  std::mt19937 rng(9);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(tokens * heads * D)), v(k.size());
  for (auto* t : {&k, &v}) {
    for (float& x : *t) x = n(rng);
  }
  const KVCacheLayer layer = cache.layer(0);
  if (fused) {
    const int width = heads * D, q_width = 3 * D, stride = q_width + 2 * width;
    std::vector<float> qkv(static_cast<size_t>(tokens * stride), 7.0f);
    for (int t = 0; t < tokens; ++t) {
      const size_t row = static_cast<size_t>(t * stride), packed = static_cast<size_t>(t * width);
      std::copy_n(k.begin() + static_cast<std::ptrdiff_t>(packed), width, &qkv[row + q_width]);
      std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(packed), width,
                  &qkv[row + q_width + width]);
    }
    cpu::reshape_and_cache(qkv.data() + q_width, qkv.data() + q_width + width, slots, layer,
                           stride);
  } else {
    cpu::reshape_and_cache(k.data(), v.data(), slots, layer);
  }
  const auto stored = [&](const void* base, size_t index) {
    if (dtype == DType::kF32) return static_cast<const float*>(base)[index];
    if (dtype == DType::kF8E4M3) return fp8_e4m3_to_f32(static_cast<const uint8_t*>(base)[index]);
    return bf16_to_f32(static_cast<const uint16_t*>(base)[index]);
  };
  const auto expected = [&](float x) {
    if (dtype == DType::kF8E4M3) return fp8_e4m3_to_f32(f32_to_fp8_e4m3(x));
    return dtype == DType::kF32 ? x : bf16_to_f32(f32_to_bf16(x));
  };
  size_t written = 0, written_nonzero = 0;  // fp8 rounds the smallest values to 0
  for (int t = 0; t < tokens; ++t) {
    if (slots[static_cast<size_t>(t)] < 0) continue;
    const int64_t b = slots[static_cast<size_t>(t)] / block;
    const int offset = static_cast<int>(slots[static_cast<size_t>(t)] % block);
    for (int h = 0; h < heads; ++h) {
      for (int d = 0; d < D; ++d) {
        const size_t i = static_cast<size_t>((t * heads + h) * D + d);
        ASSERT_EQ(stored(layer.key, layer.key_index(b, h, d, offset)), expected(k[i]))
            << "token " << t << " head " << h << " d " << d;
        ASSERT_EQ(stored(layer.value, layer.value_index(b, h, d, offset)), expected(v[i]))
            << "token " << t << " head " << h << " d " << d;
        written += 2;
        written_nonzero += (expected(k[i]) != 0.0f) + (expected(v[i]) != 0.0f);
      }
    }
  }
  size_t nonzero = 0;
  for (const void* base : {layer.key, layer.value}) {
    for (int64_t i = 0; i < spec.elements_per_layer(); ++i) {
      nonzero += stored(base, static_cast<size_t>(i)) != 0.0f;
    }
  }
  EXPECT_EQ(written, static_cast<size_t>(2 * (tokens - padding) * heads * D));
  EXPECT_EQ(nonzero, written_nonzero);
  EXPECT_GE(written_nonzero, written * 99 / 100);
}

TEST_P(PagedAttention, ReshapeAndCacheStoresEachTokenAtItsSlotOnly) {
  std::vector<int64_t> slots;
  for (int64_t s = 4; s < 64; ++s) slots.push_back(s);  // blocks 1-15 of 4 slots, not block 0
  std::mt19937 rng(9);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(41);
  slots[7] = -1;
  ExpectEachTokenStoredAtItsSlotOnly(slots, std::get<0>(GetParam()), std::get<1>(GetParam()));
}

// A prefill's tokens take consecutive slots: runs that start mid-block, cross block ends (the
// CPU layout writes each run within one block at once) and hold padding.
TEST_P(PagedAttention, ReshapeAndCacheStoresRunsOfConsecutiveSlots) {
  std::vector<int64_t> slots;
  for (int64_t s = 6; s < 23; ++s) slots.push_back(s);
  slots[5] = -1;
  for (int64_t s = 41; s < 47; ++s) slots.push_back(s);
  for (int64_t s = 28; s < 33; ++s) slots.push_back(s);
  ExpectEachTokenStoredAtItsSlotOnly(slots, std::get<0>(GetParam()), std::get<1>(GetParam()));
}

// The model's path: K and V read in place from its fused qkv rows, a prefill's runs and decodes'
// single tokens.
TEST_P(PagedAttention, ReshapeAndCacheReadsKAndVInPlaceFromFusedQkvRows) {
  std::vector<int64_t> slots;
  for (int64_t s = 5; s < 19; ++s) slots.push_back(s);
  slots[3] = -1;
  for (int64_t s : {50, 33, 61}) slots.push_back(s);
  ExpectEachTokenStoredAtItsSlotOnly(slots, std::get<0>(GetParam()), std::get<1>(GetParam()), true);
}

// Blocks of 32: whole runs of 16 tokens (the bf16 key store's transposing path) and the tokens
// after them (its one-token path, which decode takes), with a head size that fills no whole
// vector: 20 (16 + 4, or 8 + 8 + 4 on AVX2) in the CPU layout; 32 in vLLM's, which takes
// multiples of 16 only (for fp8).
TEST_P(PagedAttention, ReshapeAndCacheStoresLongRunsAndSingleTokensOfAnyHeadSize) {
  const KVLayout layout = std::get<1>(GetParam());
  std::vector<int64_t> slots;
  // Slots 35-89 with a padding token at 55: runs of 20 (16 + 4) and 8 in block 1, and of 26
  // (16 + 10) in block 2; then three single tokens.
  for (int64_t s = 35; s < 90; ++s) slots.push_back(s);
  slots[20] = -1;
  for (int64_t s : {200, 131, 97}) slots.push_back(s);
  for (const bool fused : {false, true}) {
    ExpectEachTokenStoredAtItsSlotOnly(slots, std::get<0>(GetParam()), layout, fused,
                                       layout == KVLayout::kCpu ? 20 : 32, 32);
  }
}

INSTANTIATE_TEST_SUITE_P(KvDtypesAndLayouts, PagedAttention,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kBF16,
                                                              DType::kF8E4M3),
                                            ::testing::Values(KVLayout::kCpu, KVLayout::kVllmV1)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) == KVLayout::kCpu ? "_Cpu" : "_VllmV1");
                         });

// Batch invariance across block sizes rests on this: the same context stored in blocks of 1, 3,
// 16 or 32, in either key layout, gives bit-identical outputs for every query position.
TEST(PagedAttention, OutputBitsDoNotDependOnTheBlockSize) {
  const int D = 32, len = 70, heads = 4, kv_heads = 2;
  std::mt19937 rng(9);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(len * heads * D)),
      k(static_cast<size_t>(len * kv_heads * D)), v(k.size());
  for (auto* t : {&q, &k, &v}) {
    for (float& x : *t) x = n(rng);
  }
  std::vector<int32_t> positions(len);
  for (int p = 0; p < len; ++p) positions[static_cast<size_t>(p)] = p;
  const std::vector<int32_t> qsl = {0, len};
  std::vector<float> first;
  for (auto [block, layout] : std::vector<std::pair<int, KVLayout>>{{1, KVLayout::kCpu},
                                                                    {3, KVLayout::kCpu},
                                                                    {16, KVLayout::kCpu},
                                                                    {32, KVLayout::kCpu},
                                                                    {16, KVLayout::kVllmV1},
                                                                    {32, KVLayout::kVllmV1}}) {
    const int nblocks = (len + block - 1) / block;
    KVCacheSpec spec{1, nblocks + 1, block, kv_heads, D, DType::kF32, layout};
    PagedKVCache cache(spec);
    std::vector<int32_t> table(static_cast<size_t>(nblocks));
    for (int b = 0; b < nblocks; ++b) table[static_cast<size_t>(b)] = nblocks - b;  // reversed
    std::vector<int64_t> slots;
    for (int p = 0; p < len; ++p)
      slots.push_back(int64_t{table[static_cast<size_t>(p / block)]} * block + p % block);
    cpu::reshape_and_cache(k.data(), v.data(), slots, cache.layer(0));
    std::vector<float> out(q.size());
    cpu::AttentionBatch batch{1, qsl, positions, table, nblocks};
    cpu::paged_attention(q.data(), heads, batch, cache.layer(0), out.data());
    if (first.empty()) {
      first = out;
    } else {
      EXPECT_EQ(std::memcmp(first.data(), out.data(), out.size() * 4), 0)
          << "block size " << block << (layout == KVLayout::kVllmV1 ? " vLLM v1 layout" : "");
    }
  }
}

TEST(PagedAttention, GroupedQueryHeadsReadTheirSharedKvHead) {
  const int D = 8, block = 2;
  KVCacheSpec spec{1, 4, block, 2, D, DType::kF32};  // 2 kv heads
  PagedKVCache cache(spec);
  // One token at position 0: attention over one key returns its value exactly.
  std::vector<float> k(2 * D, 0.5f), v(2 * D);
  for (int i = 0; i < 2 * D; ++i) v[static_cast<size_t>(i)] = i < D ? 1.0f : 2.0f;
  const std::vector<int64_t> slots = {2};
  cpu::reshape_and_cache(k.data(), v.data(), slots, cache.layer(0));
  std::vector<float> q(4 * D, 0.1f), out(4 * D);
  const std::vector<int32_t> qsl = {0, 1}, pos = {0}, table = {1};
  cpu::AttentionBatch batch{1, qsl, pos, table, 1};
  cpu::paged_attention(q.data(), 4, batch, cache.layer(0), out.data());
  // Query heads 0, 1 share kv head 0; heads 2, 3 share kv head 1.
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[static_cast<size_t>(D)], 1.0f);
  EXPECT_FLOAT_EQ(out[static_cast<size_t>(2 * D)], 2.0f);
  EXPECT_FLOAT_EQ(out[static_cast<size_t>(3 * D)], 2.0f);
}

// Three requests in one step, as the scheduler mixes them: a prefill from position 0, a chunked
// prefill continuing at position 70 (its queries reach 7 chunks: a phase of 4 then one of 3 in
// the AVX-512 kernel), and a decode at position 130. Random K/V fill each
// request's context in scattered blocks; q holds every token's query heads.
struct MixedBatch {
  static constexpr int kBlock = 16, kBlocksPerReq = 10;
  std::vector<int32_t> qsl = {0, 27, 58, 59};
  std::vector<int32_t> positions, table;
  std::vector<float> q;
  PagedKVCache cache;
  int heads;

  // stale_nans: every byte of the cache is 0xFF (NaN in f32, bf16, fp8 E4M3 and the f16 q8_0
  // scales) before the contexts are stored, as a freed block's past may leave it.
  MixedBatch(int D, int kv_heads, int group, DType dtype, std::mt19937& rng,
             KVLayout layout = KVLayout::kCpu, bool stale_nans = false)
      : cache(KVCacheSpec{1, 3 * kBlocksPerReq + 1, kBlock, kv_heads, D, dtype, layout}),
        heads(kv_heads * group) {
    if (stale_nans) {
      const KVCacheLayer layer = cache.layer(0);
      const auto bytes = static_cast<size_t>(layer.spec.elements_per_layer()) *
                         static_cast<size_t>(layer.spec.element_size());
      std::memset(layer.key, 0xFF, bytes);
      std::memset(layer.value, 0xFF, bytes);
      const auto scale_bytes = static_cast<size_t>(layer.spec.scales_per_layer()) * 2;
      if (layer.key_scale) std::memset(layer.key_scale, 0xFF, scale_bytes);
      if (layer.value_scale) std::memset(layer.value_scale, 0xFF, scale_bytes);
    }
    std::normal_distribution<float> n(0.0f, 1.0f);
    const std::vector<std::pair<int, int>> spans = {{0, 27}, {70, 101}, {130, 131}};
    for (int r = 0; r < 3; ++r) {
      for (int b = 0; b < kBlocksPerReq; ++b) table.push_back(3 * kBlocksPerReq - (r + 3 * b));
      const int context = spans[static_cast<size_t>(r)].second;
      std::vector<float> k(static_cast<size_t>(context) * kv_heads * D), v(k.size());
      for (auto* t : {&k, &v}) {
        for (float& x : *t) x = n(rng);
      }
      std::vector<int64_t> slots;
      for (int p = 0; p < context; ++p) {
        slots.push_back(int64_t{table[static_cast<size_t>(r * kBlocksPerReq + p / kBlock)]} *
                            kBlock +
                        p % kBlock);
      }
      cpu::reshape_and_cache(k.data(), v.data(), slots, cache.layer(0));
      for (int p = spans[static_cast<size_t>(r)].first; p < context; ++p) positions.push_back(p);
    }
    q.resize(positions.size() * static_cast<size_t>(heads * D));
    for (float& x : q) x = n(rng);
  }

  std::vector<float> attend() {
    std::vector<float> out(q.size(), -7.0f);
    cpu::AttentionBatch batch{3, qsl, positions, table, kBlocksPerReq};
    cpu::paged_attention(q.data(), heads, batch, cache.layer(0), out.data());
    return out;
  }
};

using test::IsaGuard;

TEST(PagedAttention, EveryIsaPathIsBitIdenticalToThePortableOrder) {
  IsaGuard guard;
  std::mt19937 rng(11);
  int compared = 0;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3, DType::kQ8_0}) {
    for (int D : {8, 16, 24, 32, 64, 128}) {
      for (int group : {1, 3, 4}) {
        // Chunks read in place from the CPU layout's blocks, or copied from the vLLM layout
        // (whose head size must hold whole 16-byte groups; q8_0 has the CPU layout only).
        const bool vllm_fits = dtype != DType::kQ8_0 && D % (16 / (dtype == DType::kF32    ? 4
                                                                   : dtype == DType::kBF16 ? 2
                                                                                           : 1)) ==
                                                            0;
        const KVLayout layout = group == 3 && vllm_fits ? KVLayout::kVllmV1 : KVLayout::kCpu;
        MixedBatch mb(D, 2, group, dtype, rng, layout);
        cpu::set_isa(cpu::Isa::kGeneric);
        const std::vector<float> ref = mb.attend();
        for (cpu::Isa isa :
             {cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kAvx512Vnni, cpu::Isa::kAvx512Bf16}) {
          if (!cpu::cpu_supports(isa)) continue;
          cpu::set_isa(isa);
          const std::vector<float> out = mb.attend();
          ASSERT_EQ(std::memcmp(out.data(), ref.data(), out.size() * 4), 0)
              << cpu::to_string(isa) << " D=" << D << " group=" << group << " " << to_string(dtype);
          ++compared;
        }
      }
    }
  }
  if (cpu::cpu_supports(cpu::Isa::kAvx2)) {
    EXPECT_GE(compared, 72);
  }
}

// Each request's last chunk is partial (contexts of 27, 101 and 131 positions in blocks of 16),
// and its positions past the context hold whatever the block held before: NaN here. The kernels
// may read such K rows (their scores are masked to -inf) but must not let their V rows in.
TEST(PagedAttention, StaleNansPastTheContextInItsLastBlockChangeNoOutputBit) {
  IsaGuard guard;
  int compared = 0;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3, DType::kQ8_0}) {
    for (int D : {16, 64, 128}) {
      for (int group : {1, 4}) {
        std::mt19937 clean_rng(31), stale_rng(31);
        MixedBatch clean(D, 2, group, dtype, clean_rng);
        MixedBatch stale(D, 2, group, dtype, stale_rng, KVLayout::kCpu, true);
        for (cpu::Isa isa : {cpu::Isa::kGeneric, cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
          if (!cpu::cpu_supports(isa)) continue;
          cpu::set_isa(isa);
          const std::vector<float> expected = clean.attend(), out = stale.attend();
          ASSERT_EQ(std::memcmp(out.data(), expected.data(), out.size() * 4), 0)
              << cpu::to_string(isa) << " D=" << D << " group=" << group << " " << to_string(dtype);
          ++compared;
        }
      }
    }
  }
  EXPECT_GE(compared, 24);
}

// A bf16 cache takes its products in vdpbf16ps's order, denormals flushed (attention_tile.h).
// Denormal K and V elements, denormal and tiny queries, and queries large enough that most
// softmax weights underflow: every path gives the portable order's bits, and the call leaves
// this thread's MXCSR (its flush-to-zero and denormals-are-zero bits) as it found them.
TEST(PagedAttention, Bf16CacheFlushesDenormalsAlikeOnEveryIsaPathAndRestoresMxcsr) {
  IsaGuard guard;
  std::mt19937 rng(17);
  MixedBatch mb(64, 2, 4, DType::kBF16, rng);
  const KVCacheLayer layer = mb.cache.layer(0);
  auto* keys = static_cast<uint16_t*>(layer.key);
  auto* values = static_cast<uint16_t*>(layer.value);
  const auto elements = static_cast<size_t>(layer.spec.elements_per_layer());
  for (size_t i = 0; i < elements; i += 5) {
    const auto denormal = static_cast<uint16_t>((i % 2 ? 0x8000 : 0) | (1 + i % 0x7F));
    keys[i] = values[(i + 2) % elements] = denormal;
  }
  for (size_t i = 0; i < mb.q.size(); ++i) {
    if (i % 7 == 0)
      mb.q[i] = (i % 2 ? -1.0f : 1.0f) * 3e-39f;  // f32 denormal
    else if (i % 7 == 1)
      mb.q[i] = 1.2e-38f;  // normal in f32, just above bf16's smallest
    else
      mb.q[i] *= 12.0f;  // scores of hundreds: most weights exp(s - max) underflow
  }
  const unsigned csr = _mm_getcsr();
  cpu::set_isa(cpu::Isa::kGeneric);
  const std::vector<float> ref = mb.attend();
  EXPECT_EQ(_mm_getcsr(), csr);
  int compared = 0;
  for (cpu::Isa isa :
       {cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kAvx512Vnni, cpu::Isa::kAvx512Bf16}) {
    if (!cpu::cpu_supports(isa)) continue;
    cpu::set_isa(isa);
    const std::vector<float> out = mb.attend();
    EXPECT_EQ(_mm_getcsr(), csr) << cpu::to_string(isa);
    ASSERT_EQ(std::memcmp(out.data(), ref.data(), out.size() * 4), 0) << cpu::to_string(isa);
    ++compared;
  }
  for (float x : ref) ASSERT_TRUE(std::isfinite(x));
  if (cpu::cpu_supports(cpu::Isa::kAvx2)) {
    EXPECT_GE(compared, 1);
  }
}

// Stores a run of tokens with head size D into a bf16 cache on every ISA path the CPU has and
// checks every element against f32_to_bf16.
void bf16_cache_stores_f32_to_bf16_on_every_isa_path(int D) {
  const int heads = 2, block = 32, num_blocks = 4;
  std::vector<int64_t> slots;
  for (int64_t s = 37; s < 110; ++s) slots.push_back(s);
  slots[20] = -1;
  const size_t width = static_cast<size_t>(heads) * D;
  std::vector<float> k(slots.size() * width), v(k.size());
  std::mt19937 rng(21);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto* t : {&k, &v}) {
    for (float& x : *t) x = n(rng);
  }
  const uint32_t special[] = {0x3F808000u, 0x3F818000u, 0xBF808000u, 0x7FC01234u, 0xFF812345u,
                              0x00000001u, 0x80400000u, 0x7F7FFFFFu, 0xFF800000u, 0x80000000u};
  for (size_t i = 0; i < k.size(); i += 7) {
    for (auto* t : {&k, &v}) std::memcpy(&(*t)[i], &special[(i / 7) % 10], 4);
  }
  int paths = 0;
  for (cpu::Isa isa : {cpu::Isa::kGeneric, cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
    if (!cpu::cpu_supports(isa)) continue;
    cpu::set_isa(isa);
    PagedKVCache cache(KVCacheSpec{1, num_blocks, block, heads, D, DType::kBF16});
    const KVCacheLayer layer = cache.layer(0);
    cpu::reshape_and_cache(k.data(), v.data(), slots, layer);
    const auto* keys = static_cast<const uint16_t*>(layer.key);
    const auto* values = static_cast<const uint16_t*>(layer.value);
    for (size_t t = 0; t < slots.size(); ++t) {
      if (slots[t] < 0) continue;
      const int64_t b = slots[t] / block;
      const int offset = static_cast<int>(slots[t] % block);
      for (int h = 0; h < heads; ++h) {
        for (int d = 0; d < D; ++d) {
          const size_t i = t * width + static_cast<size_t>(h * D + d);
          ASSERT_EQ(keys[layer.key_index(b, h, d, offset)], f32_to_bf16(k[i]))
              << cpu::to_string(isa) << " D " << D << " token " << t << " head " << h << " d " << d;
          ASSERT_EQ(values[layer.value_index(b, h, d, offset)], f32_to_bf16(v[i]))
              << cpu::to_string(isa) << " D " << D << " token " << t << " head " << h << " d " << d;
        }
      }
    }
    ++paths;
  }
  EXPECT_EQ(paths, 1 + cpu::cpu_supports(cpu::Isa::kAvx2) + cpu::cpu_supports(cpu::Isa::kAvx512));
}

// A bf16 cache holds exactly f32_to_bf16 of each value on every path (the AVX-512 one rounds 16
// at a time, the AVX2 one 8): ties to even, NaN quieted with its payload, denormals kept,
// overflow to infinity; runs of 16 tokens and more, and a head size that leaves a partial vector.
TEST(PagedAttention, Bf16CacheStoresF32ToBf16OfEveryValueOnEveryIsaPath) {
  IsaGuard guard;
  // Head sizes of whole 8-lane vectors (40) and with a partial one on every path (20).
  for (const int D : {40, 20}) bf16_cache_stores_f32_to_bf16_on_every_isa_path(D);
}

// Batch invariance: a token's output bits are the same whether its request's tokens are
// computed together (as in one prefill) or each alone (as in decode steps).
TEST(PagedAttention, ATokensOutputDoesNotDependOnTheTokensComputedWithIt) {
  std::mt19937 rng(12);
  for (const auto& [D, dtype] : std::vector<std::pair<int, DType>>{
           {16, DType::kF32}, {64, DType::kF32}, {128, DType::kF32}, {64, DType::kBF16}}) {
    MixedBatch mb(D, 2, 4, dtype, rng);
    const std::vector<float> together = mb.attend();
    const size_t width = static_cast<size_t>(mb.heads * D);
    const std::vector<int32_t> all_positions = mb.positions;
    const std::vector<float> all_q = mb.q;
    for (size_t t = 0; t < all_positions.size(); ++t) {
      const int r = t < 27 ? 0 : t < 58 ? 1 : 2;
      mb.positions = {all_positions[t]};
      mb.q.assign(all_q.begin() + static_cast<std::ptrdiff_t>(t * width),
                  all_q.begin() + static_cast<std::ptrdiff_t>((t + 1) * width));
      std::vector<float> out(width);
      const std::vector<int32_t> qsl = {0, 1};
      cpu::AttentionBatch batch{
          1, qsl, mb.positions,
          std::span<const int32_t>(mb.table).subspan(static_cast<size_t>(r) * mb.kBlocksPerReq),
          mb.kBlocksPerReq};
      cpu::paged_attention(mb.q.data(), mb.heads, batch, mb.cache.layer(0), out.data());
      ASSERT_EQ(std::memcmp(out.data(), together.data() + t * width, width * 4), 0)
          << "D=" << D << " " << to_string(dtype) << " token " << t << " at position "
          << all_positions[t];
    }
  }
}

}  // namespace
}  // namespace pagedllm
