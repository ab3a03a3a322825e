#include "kernels/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "format/block_quant.h"
#include "format/dequant.h"
#include "kernels/cpu/bf16_activations.h"
#include "kernels/cpu/bf16_batch_tile.h"

namespace pagedllm::cpu {
namespace {

struct Weights {
  std::vector<float> f32;  // the values as stored (rounded or dequantized)
  std::vector<uint16_t> bf16;
  std::vector<uint8_t> quantized;
  WeightMatrix matrix;
};

Weights random_weights(int N, int K, DType dtype, std::mt19937& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  Weights w;
  w.f32.resize(static_cast<size_t>(N) * K);
  for (float& v : w.f32) v = n(rng);
  if (dtype == DType::kBF16) {
    for (float v : w.f32) w.bf16.push_back(f32_to_bf16(v));
    for (size_t i = 0; i < w.f32.size(); ++i) w.f32[i] = bf16_to_f32(w.bf16[i]);
    w.matrix = WeightMatrix{DType::kBF16, N, K, w.bf16.data()};
  } else if (is_block_quantized(dtype)) {
    const size_t rb = row_bytes(dtype, K);
    w.quantized.resize(rb * static_cast<size_t>(N));
    for (int r = 0; r < N; ++r) {
      quantize_row(dtype, w.f32.data() + static_cast<size_t>(r) * K, w.quantized.data() + r * rb,
                   K);
      dequantize_row(dtype, w.quantized.data() + r * rb, w.f32.data() + static_cast<size_t>(r) * K,
                     K);
    }
    w.matrix = WeightMatrix{dtype, N, K, w.quantized.data()};
  } else {
    w.matrix = WeightMatrix{DType::kF32, N, K, w.f32.data()};
  }
  return w;
}

// x as the int8 kernels see it against weights of `dtype`: codes times the scales of blocks of
// 32 (Q8_0, Q4_0) or 256 (the k-quants).
std::vector<float> as_quantized(const std::vector<float>& x, int M, int K, DType dtype) {
  QuantizedActivations q;
  quantize_activations(x.data(), M, K, q, static_cast<int>(block_elements(dtype)));
  std::vector<float> out(x.size());
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) out[static_cast<size_t>(m * K + k)] = q.scale(m, k) * q.row(m)[k];
  }
  return out;
}

// x as the bf16 kernels see it: rounded to bf16.
std::vector<float> as_bf16(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = bf16_to_f32(bf16_flushed(x[i]));
  return out;
}

// Activations [M, K] and a bias [N], standard normal.
std::pair<std::vector<float>, std::vector<float>> random_inputs(int M, int K, int N,
                                                                std::mt19937& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(M) * K), bias(static_cast<size_t>(N));
  for (float& v : x) v = n(rng);
  for (float& v : bias) v = n(rng);
  return {std::move(x), std::move(bias)};
}

std::vector<Isa> supported_paths() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kGeneric, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAvx512Vnni,
                  Isa::kAvx512Bf16, Isa::kAmxInt8}) {
    if (cpu_supports(isa)) out.push_back(isa);
  }
  return out;
}

TEST(Gemm, EveryIsaPathIsBitIdenticalToTheReferenceOnOddShapes) {
  std::mt19937 rng(3);
  int compared = 0;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1,
                      DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K, DType::kQ3_K,
                      DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS}) {
    for (int M : {1, 2, 3, 5, 6, 9}) {
      for (int N : {1, 15, 16, 17, 40}) {
        for (int K : {1, 7, 32, 255, 256, 257, 320, 512, 600}) {
          if (K % block_elements(dtype) != 0) continue;
          const Weights w = random_weights(N, K, dtype, rng);
          const PackedMatrix packed(w.matrix);
          const auto [x, bias] = random_inputs(M, K, N, rng);
          std::vector<float> ref(static_cast<size_t>(M) * N);
          gemm_packed(Isa::kGeneric, x.data(), M, packed, ref.data(), bias.data());
          // The reference is a real product: compare with a double-precision sum, of the
          // activations as quantized for block-quantized weights and as rounded for bf16.
          const std::vector<float> xs = is_block_quantized(dtype) ? as_quantized(x, M, K, dtype)
                                        : dtype == DType::kBF16   ? as_bf16(x)
                                                                  : x;
          for (int m = 0; m < M; ++m) {
            for (int j = 0; j < N; ++j) {
              double s = bias[static_cast<size_t>(j)];
              for (int k = 0; k < K; ++k)
                s += double{xs[static_cast<size_t>(m * K + k)]} *
                     w.f32[static_cast<size_t>(j * K + k)];
              ASSERT_NEAR(ref[static_cast<size_t>(m * N + j)], s, 1e-5 * (1 + std::sqrt(double(K))))
                  << to_string(dtype) << " K=" << K;
            }
          }
          for (Isa isa : supported_paths()) {
            std::vector<float> y(ref.size(), -7.0f);
            gemm_packed(isa, x.data(), M, packed, y.data(), bias.data());
            ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
                << to_string(isa) << " M=" << M << " N=" << N << " K=" << K << " "
                << to_string(dtype);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 500);
}

TEST(Gemm, ARowGetsTheSameBitsAloneOrInABatch) {
  // Every path against the reference too, on 75 rows with a partial last K block (and for bf16
  // an odd K). The AVX-512 f32 tile takes them as row tiles of 8 and 7 over panel groups of 3
  // and 2 (70 outputs are 5 panels), and alone as groups of 4 and 1; it takes K in ranges of
  // 4096 past K = 4096 (4353: two ranges, 8500: three).
  std::mt19937 rng(4);
  for (const auto& [dtype, K] :
       {std::pair{DType::kF32, 1100}, std::pair{DType::kF32, 4353}, std::pair{DType::kF32, 8500},
        std::pair{DType::kBF16, 1101}, std::pair{DType::kQ8_0, 768}, std::pair{DType::kQ4_K, 768},
        std::pair{DType::kQ4_0, 768}, std::pair{DType::kQ6_K, 768}, std::pair{DType::kQ4_1, 768},
        std::pair{DType::kQ5_0, 768}, std::pair{DType::kQ5_1, 768}, std::pair{DType::kIQ4_NL, 768},
        std::pair{DType::kQ2_K, 768}, std::pair{DType::kQ3_K, 768},
        std::pair{DType::kIQ4_XS, 768}}) {
    const int M = 75, N = 70;
    const Weights w = random_weights(N, K, dtype, rng);
    const PackedMatrix packed(w.matrix);
    const auto [x, bias] = random_inputs(M, K, N, rng);
    std::vector<float> reference(static_cast<size_t>(M) * N), single(static_cast<size_t>(N));
    gemm_packed(Isa::kGeneric, x.data(), M, packed, reference.data(), bias.data());
    for (Isa isa : supported_paths()) {
      std::vector<float> batch(reference.size());
      gemm_packed(isa, x.data(), M, packed, batch.data(), bias.data());
      ASSERT_EQ(std::memcmp(batch.data(), reference.data(), batch.size() * 4), 0)
          << to_string(dtype) << " " << to_string(isa);
      for (int m = 0; m < M; m += 7) {
        gemm_packed(isa, x.data() + static_cast<size_t>(m) * K, 1, packed, single.data(),
                    bias.data());
        ASSERT_EQ(std::memcmp(single.data(), batch.data() + static_cast<size_t>(m) * N, N * 4), 0)
            << to_string(dtype) << " " << to_string(isa) << " row " << m;
      }
    }
  }
}

TEST(Gemm, PrefillBatchesTakePanelGroupsInBlocksAndFillEveryOutput) {
  // 131 rows are 17 row tiles, a prefill shape: the AVX-512 f32 tile takes its panel groups
  // three at a time, then singly for the last ones. 583 outputs are 37 panels, 13 groups (the
  // last of one panel): blocks, singles and a short group. Every output must get the
  // reference's bits, and none may keep the -7 it started with.
  std::mt19937 rng(9);
  const int M = 131, N = 583, K = 300;
  const Weights w = random_weights(N, K, DType::kF32, rng);
  const PackedMatrix packed(w.matrix);
  const auto [x, bias] = random_inputs(M, K, N, rng);
  std::vector<float> reference(static_cast<size_t>(M) * N);
  gemm_packed(Isa::kGeneric, x.data(), M, packed, reference.data(), bias.data());
  for (Isa isa : supported_paths()) {
    std::vector<float> y(reference.size(), -7.0f);
    gemm_packed(isa, x.data(), M, packed, y.data(), bias.data());
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(y[i], reference[i]) << to_string(isa) << " row " << i / N << " column " << i % N;
    }
  }
}

TEST(Gemm, Bf16WeightsSeeActivationsRoundedToBf16) {
  // 1 + 2^-9 is a quarter of bf16's step at 1 and rounds to 1; 1 + 3 * 2^-9 rounds up to
  // 1 + 2^-7. An f32 product would keep both.
  const std::vector<uint16_t> w = {f32_to_bf16(1.0f), f32_to_bf16(2.0f)};
  const WeightMatrix matrix{DType::kBF16, 1, 2, w.data()};
  const PackedMatrix packed(matrix);
  const std::vector<float> x = {1.0f + 0x1p-9f, 1.0f + 3 * 0x1p-9f};
  for (Isa isa : supported_paths()) {
    float y = 0.0f;
    gemm_packed(isa, x.data(), 1, packed, &y, nullptr);
    EXPECT_EQ(y, 1.0f + 2.0f * (1.0f + 0x1p-7f)) << to_string(isa);
  }
}

TEST(Gemm, Bf16ProductFlushesDenormalsOnEveryPath) {
  // As vdpbf16ps does: denormal inputs count as zero and denormal results become zero.
  const float tiny = 0x1p-70f;  // squared, 2^-140 is denormal in f32
  const std::vector<uint16_t> w = {f32_to_bf16(tiny), f32_to_bf16(tiny), f32_to_bf16(3.0f),
                                   f32_to_bf16(0x1p-130f)};  // a denormal weight
  const WeightMatrix matrix{DType::kBF16, 2, 2, w.data()};
  const PackedMatrix packed(matrix);
  const std::vector<float> x = {tiny, tiny, 0x1p-128f, 2.0f};  // row 1 has a denormal activation
  const std::vector<float> bias = {0.0f, 0x1p-140f};           // a denormal bias
  // The caller runs without FTZ/DAZ, and gets its MXCSR back: only its control bits, as bits
  // 0-5 are sticky exception flags that any arithmetic may set.
  _mm_setcsr(_mm_getcsr() & ~0x8040u);
  const auto control = [] { return _mm_getcsr() & ~0x3Fu; };
  const unsigned caller_csr = control();
  for (Isa isa : supported_paths()) {
    std::vector<float> y(4, -1.0f);
    gemm_packed(isa, x.data(), 2, packed, y.data(), bias.data());
    EXPECT_EQ(control(), caller_csr) << "the flushing must end with the call";
    EXPECT_EQ(y[0], 0.0f) << to_string(isa);  // 2^-139 would be denormal
    EXPECT_EQ(y[1], 3.0f * tiny) << to_string(isa);
    EXPECT_EQ(y[2], 2.0f * tiny) << to_string(isa);  // the denormal activation counts as zero
    // 3 * 2^-128 + 2 * 2^-130 + 2^-140 is a denormal sum unflushed; flushed, all three are zero.
    EXPECT_EQ(y[3], 0.0f) << to_string(isa);
  }
}

TEST(Gemm, Bf16BatchesGetTheReferenceBitsFromTheDotAndTheFmaTile) {
  // On AVX512-BF16 CPUs the process times vdpbf16ps against FMAs on widened activations and keeps
  // the faster for batches (bf16_batch_tile.h), so both must give the reference's bits: odd K,
  // row tiles of 3 to 6, and one row scaled so that its products and sums fall among the
  // denormals, which both flush.
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  struct Restore {  // the process's choice, also when an assertion ends the test early
    Bf16BatchTile before = bf16_batch_tile();
    ~Restore() { set_bf16_batch_tile(before); }
  } restore;
  std::mt19937 rng(11);
  int compared = 0;
  for (const auto& [M, N, K] : {std::tuple{3, 17, 7}, std::tuple{6, 40, 257},
                                std::tuple{7, 33, 600}, std::tuple{75, 70, 1101}}) {
    const Weights w = random_weights(N, K, DType::kF32, rng);
    std::vector<uint16_t> bf16;
    for (float v : w.f32) bf16.push_back(f32_to_bf16(v * 0x1p-60f));
    const PackedMatrix packed(WeightMatrix{DType::kBF16, N, K, bf16.data()});
    auto x = random_inputs(M, K, N, rng).first;
    for (int k = 0; k < K; ++k) x[static_cast<size_t>(K + k)] *= 0x1p-66f;  // row 1
    std::vector<float> reference(static_cast<size_t>(M) * N);
    gemm_packed(Isa::kGeneric, x.data(), M, packed, reference.data(), nullptr);
    // Row 1's products are about 2^-126: those flushed make its outputs differ from the exact sum.
    int flush_changed = 0;
    for (int j = 0; j < N; ++j) {
      double exact = 0.0;
      for (int k = 0; k < K; ++k) {
        exact += double{bf16_to_f32(bf16_flushed(x[static_cast<size_t>(K + k)]))} *
                 bf16_to_f32(bf16[static_cast<size_t>(j) * K + k]);
      }
      flush_changed +=
          std::abs(reference[static_cast<size_t>(N + j)] - exact) > 1e-3 * std::abs(exact);
    }
    for (Bf16BatchTile tile : {Bf16BatchTile::kDot, Bf16BatchTile::kFma}) {
      set_bf16_batch_tile(tile);
      for (Isa isa : supported_paths()) {
        std::vector<float> y(reference.size(), -7.0f);
        gemm_packed(isa, x.data(), M, packed, y.data(), nullptr);
        ASSERT_EQ(std::memcmp(y.data(), reference.data(), y.size() * 4), 0)
            << to_string(tile) << " " << to_string(isa) << " M=" << M << " K=" << K;
        ++compared;
      }
    }
    EXPECT_GT(flush_changed, 0) << "no flushed products in row 1 at K=" << K;
  }
  EXPECT_GT(compared, 8);
}

TEST(Gemm, StackedMatricesEqualSeparateOnes) {
  std::mt19937 rng(5);
  const Weights a = random_weights(20, 64, DType::kBF16, rng),
                b = random_weights(9, 64, DType::kBF16, rng);
  const PackedMatrix fused(std::vector<const WeightMatrix*>{&a.matrix, &b.matrix});
  const PackedMatrix pa(a.matrix), pb(b.matrix);
  std::vector<float> x(3 * 64, 0.25f), y(3 * 29), ya(3 * 20), yb(3 * 9);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(double(i)));
  gemm_packed(x.data(), 3, fused, y.data());
  gemm_packed(x.data(), 3, pa, ya.data());
  gemm_packed(x.data(), 3, pb, yb.data());
  for (int m = 0; m < 3; ++m) {
    for (int j = 0; j < 20; ++j)
      EXPECT_EQ(y[static_cast<size_t>(m * 29 + j)], ya[static_cast<size_t>(m * 20 + j)]);
    for (int j = 0; j < 9; ++j)
      EXPECT_EQ(y[static_cast<size_t>(m * 29 + 20 + j)], yb[static_cast<size_t>(m * 9 + j)]);
  }
}

TEST(Gemm, MixedKQuantStackEqualsSeparateMatrices) {
  // As in a Q4_K_M file: Q and K in Q4_K (mins, sub-blocks of 32), V in Q6_K (sub-blocks of 16),
  // fused into one QKV product on the finer sub-block. Q4_K's 32-element sub-blocks then add as
  // two halves, in integers, so every part gets the bits it gets alone.
  std::mt19937 rng(6);
  const int K = 512;
  const Weights q = random_weights(33, K, DType::kQ4_K, rng),
                k = random_weights(16, K, DType::kQ4_K, rng),
                v = random_weights(7, K, DType::kQ6_K, rng);
  const PackedMatrix fused(std::vector<const WeightMatrix*>{&q.matrix, &k.matrix, &v.matrix});
  EXPECT_EQ(fused.quant_block(), 16);
  EXPECT_TRUE(fused.has_mins());
  const int M = 5, N = 33 + 16 + 7;
  std::vector<float> x(static_cast<size_t>(M) * K);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::cos(0.37 * double(i)));
  for (Isa isa : supported_paths()) {
    std::vector<float> y(static_cast<size_t>(M) * N);
    gemm_packed(isa, x.data(), M, fused, y.data(), nullptr);
    int offset = 0;
    for (const Weights* part : {&q, &k, &v}) {
      const PackedMatrix alone(part->matrix);
      const int n = part->matrix.rows;
      std::vector<float> ya(static_cast<size_t>(M) * n);
      gemm_packed(isa, x.data(), M, alone, ya.data(), nullptr);
      for (int m = 0; m < M; ++m) {
        for (int j = 0; j < n; ++j) {
          const float got = y[static_cast<size_t>(m * N + offset + j)];
          const float alone_value = ya[static_cast<size_t>(m * n + j)];
          ASSERT_EQ(got, alone_value) << to_string(isa) << " row " << m << " column " << offset + j;
        }
      }
      offset += n;
    }
  }
}

TEST(PackedMatrix, Iq4StoresFourBitIndicesOfItsLevelsUnlessStackedWithOtherFormats) {
  std::mt19937 rng(8);
  const int K = 512;
  const Weights nl = random_weights(17, K, DType::kIQ4_NL, rng),
                xs = random_weights(17, K, DType::kIQ4_XS, rng),
                q4_k = random_weights(17, K, DType::kQ4_K, rng);
  for (const Weights* w : {&nl, &xs}) {
    const PackedMatrix packed(w->matrix);
    EXPECT_TRUE(packed.table_codes());
    EXPECT_EQ(packed.code_bits(), 4);
    EXPECT_EQ(packed.code_offset(), 128);
    // Half a byte a weight, then per 16 outputs an f16 per super-block and a byte per 32 k.
    const size_t supers = w == &nl ? K / 32 : K / 256;
    EXPECT_EQ(packed.bytes(), size_t{2} * 16 * K / 2 + 2 * 16 * (2 * supers + K / 32));
    std::vector<int8_t> codes(K);
    std::vector<float> scales(K / 32), mins(K / 32);
    for (int n = 0; n < 17; ++n) {
      unpack_blocks(w->matrix.dtype, w->matrix.row(n), K, codes.data(), scales.data(), mins.data());
      for (int k = 0; k < K; ++k)
        ASSERT_EQ(packed.code(n / 16, k, n % 16), codes[static_cast<size_t>(k)] + 128);
    }
  }
  EXPECT_TRUE(PackedMatrix(std::vector<const WeightMatrix*>{&nl.matrix, &xs.matrix}).table_codes());
  const PackedMatrix mixed(std::vector<const WeightMatrix*>{&xs.matrix, &q4_k.matrix});
  EXPECT_FALSE(mixed.table_codes());
  EXPECT_EQ(mixed.code_bits(), 8);
}

TEST(PackedMatrix, Q2KCodesTakeTwoBitsAndStackedWithQ3KFour) {
  std::mt19937 rng(9);
  const int K = 512;
  const Weights q2_k = random_weights(17, K, DType::kQ2_K, rng),
                q3_k = random_weights(17, K, DType::kQ3_K, rng);
  const PackedMatrix packed(q2_k.matrix);
  EXPECT_EQ(packed.code_bits(), 2);
  // A quarter byte a weight; per 16 outputs an f16 d and dmin per 256 k and a scale and a min
  // byte per 16 k.
  EXPECT_EQ(packed.bytes(), size_t{2} * 16 * K / 4 + 2 * 2 * 16 * (2 * (K / 256) + K / 16));
  std::vector<int8_t> codes(K);
  std::vector<float> scales(K / 16), mins(K / 16);
  for (int n = 0; n < 17; ++n) {
    unpack_blocks(DType::kQ2_K, q2_k.matrix.row(n), K, codes.data(), scales.data(), mins.data());
    for (int k = 0; k < K; ++k)
      ASSERT_EQ(packed.code(n / 16, k, n % 16), codes[static_cast<size_t>(k)]) << n << " " << k;
  }
  // Q3_K's offset 4 lifts Q2_K's codes to 7.
  EXPECT_EQ(PackedMatrix(std::vector<const WeightMatrix*>{&q2_k.matrix, &q3_k.matrix}).code_bits(),
            4);
  EXPECT_EQ(PackedMatrix(q3_k.matrix).code_bits(), 4);
}

TEST(PackedMatrix, CodesTakeFourFiveSixOrEightBitsAsTheirRangeNeeds) {
  std::mt19937 rng(7);
  const int K = 256;
  const Weights q4_0 = random_weights(17, K, DType::kQ4_0, rng),
                q4_k = random_weights(17, K, DType::kQ4_K, rng),
                q5_k = random_weights(17, K, DType::kQ5_K, rng),
                q6_k = random_weights(17, K, DType::kQ6_K, rng),
                q8_0 = random_weights(17, K, DType::kQ8_0, rng);
  for (const Weights* w : {&q4_0, &q4_k, &q5_k, &q6_k, &q8_0}) {
    const PackedMatrix packed(w->matrix);
    const DType dtype = w->matrix.dtype;
    const int bits = dtype == DType::kQ8_0                            ? 8
                     : dtype == DType::kQ4_0 || dtype == DType::kQ4_K ? 4
                     : dtype == DType::kQ5_K                          ? 5
                                                                      : 6;
    EXPECT_EQ(packed.code_bits(), bits) << to_string(dtype);
    // Factored scales: per 16 outputs an f16 per super-block (32 for Q4_0 and Q8_0, 256 for
    // the k-quants) and a byte per sub-block; the mins of Q4_K and Q5_K the same again.
    const bool k_quant = dtype != DType::kQ4_0 && dtype != DType::kQ8_0;
    const size_t supers = k_quant ? K / 256 : K / 32;
    const size_t subs = K / sub_block_elements(dtype);
    const size_t factor_bytes = (has_mins(dtype) ? 2 : 1) * 2 * 16 * (2 * supers + subs);
    EXPECT_EQ(packed.bytes(), size_t{2} * 16 * K * bits / 8 + factor_bytes) << to_string(dtype);
    // Every stored code is the format's code plus the offset.
    std::vector<int8_t> codes(K);
    std::vector<float> scales(K / 16), mins(K / 16);
    for (int n = 0; n < 17; ++n) {
      unpack_blocks(w->matrix.dtype, w->matrix.row(n), K, codes.data(), scales.data(), mins.data());
      for (int k = 0; k < K; ++k) {
        ASSERT_EQ(packed.code(n / 16, k, n % 16),
                  codes[static_cast<size_t>(k)] + packed.code_offset())
            << to_string(w->matrix.dtype) << " n=" << n << " k=" << k;
      }
    }
  }
  // Q4_0's offset 8 pushes Q4_K's codes past 15 (but not past 31); with Q8_0 they need 8 bits.
  const PackedMatrix mixed(std::vector<const WeightMatrix*>{&q4_0.matrix, &q4_k.matrix});
  EXPECT_EQ(mixed.code_bits(), 5);
  // Q5_K beside Q6_K (as Q5_K_M stacks attn_q, attn_k and a Q6_K attn_v) shares Q6_K's 16-k
  // sub-blocks, which 5-bit chunks of 32 k do not split: 6 bits.
  EXPECT_EQ(PackedMatrix(std::vector<const WeightMatrix*>{&q5_k.matrix, &q6_k.matrix}).code_bits(),
            6);
  EXPECT_EQ(PackedMatrix(std::vector<const WeightMatrix*>{&q4_k.matrix, &q8_0.matrix}).code_bits(),
            8);
  EXPECT_EQ(mixed.code_offset(), 8);
  std::vector<int8_t> codes(K);
  std::vector<float> scales(K / 16), mins(K / 16);
  unpack_blocks(DType::kQ4_K, q4_k.matrix.row(3), K, codes.data(), scales.data(), mins.data());
  EXPECT_EQ(mixed.code(1, 5, 4), codes[5] + 8);  // output 17 + 3 = 20 is Q4_K's row 3
}

TEST(QuantizedActivations, BlocksScaleToTheirLargestMagnitudeAndSumTheirCodes) {
  std::vector<float> x(64);
  for (int k = 0; k < 64; ++k) x[static_cast<size_t>(k)] = 0.1f * static_cast<float>(k - 20);
  x[40] = -12.7f;  // the second block's extreme
  QuantizedActivations q;
  quantize_activations(x.data(), 1, 64, q);
  EXPECT_FLOAT_EQ(q.scale(0, 0), 2.0f / 127.0f);  // max |x| of [0, 32) is |x[0]| = 2
  EXPECT_FLOAT_EQ(q.scale(0, 32), 0.1f);
  EXPECT_EQ(q.row(0)[0], -127);
  EXPECT_EQ(q.row(0)[31], 70);  // 1.1 / (2 / 127) = 69.85
  EXPECT_EQ(q.row(0)[32], 12);
  EXPECT_EQ(q.row(0)[40], -127);
  for (int k0 : {0, 16, 32, 48}) {
    int32_t expected = 0;
    for (int k = k0; k < k0 + 16; ++k) expected += q.row(0)[k];
    EXPECT_EQ(q.sum(0, k0, 16), expected);
  }
  EXPECT_EQ(q.sum(0, 0, 64), q.sum(0, 0, 32) + q.sum(0, 32, 32));
}

TEST(Gemm, BlockQuantizedProductStaysCloseToTheFloatProduct) {
  // Quantizing activations costs at most half a step per element: check the error against the
  // unquantized product stays within that.
  std::mt19937 rng(8);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int M = 3, N = 20, K = 512;
  const Weights w = random_weights(N, K, DType::kQ8_0, rng);
  const PackedMatrix packed(w.matrix);
  std::vector<float> x(static_cast<size_t>(M) * K), y(static_cast<size_t>(M) * N);
  for (float& v : x) v = n(rng);
  gemm_packed(x.data(), M, packed, y.data());
  for (int m = 0; m < M; ++m) {
    for (int j = 0; j < N; ++j) {
      double exact = 0.0, bound = 0.0;
      for (int k = 0; k < K; ++k) {
        const double wk = w.f32[static_cast<size_t>(j * K + k)];
        exact += x[static_cast<size_t>(m * K + k)] * wk;
        bound += std::fabs(wk) * 4.5 / 127.0 / 2.0;  // |x| < 4.5 here: step <= 4.5 / 127
      }
      EXPECT_NEAR(y[static_cast<size_t>(m * N + j)], exact, bound);
      EXPECT_NE(y[static_cast<size_t>(m * N + j)], static_cast<float>(exact));  // really quantized
    }
  }
}

// Weights at the ends of their code range against activations whose codes are all +-127 with
// the same signs: the largest integer pair sums any path meets. The AVX2 path adds code pairs
// in 16 bits (vpmaddubsw saturates past 32767), so these are where it would first go wrong.
TEST(Gemm, ExtremeCodesAgainstFullScaleActivationsStayExactOnEveryPath) {
  std::mt19937 rng(11);
  const int N = 20, K = 256, M = 8;
  std::vector<float> sign(K);
  for (float& s : sign) s = rng() % 2 ? 1.0f : -1.0f;
  // Rows 0 and 1: codes +127 / -127 in the weights' sign pattern and against it; rows 2, 3:
  // all +127, all -127. Rows 4-7 repeat them, so that the AVX2 int8 tile's 8-row pass (the one
  // prefill runs) meets them too.
  std::vector<float> x(static_cast<size_t>(M) * K);
  for (int m = 0; m < M; m += 4) {
    float* rows = x.data() + static_cast<size_t>(m) * K;
    for (int k = 0; k < K; ++k) {
      rows[k] = sign[k];
      rows[K + k] = -sign[k];
      rows[2 * K + k] = 1.0f;
      rows[3 * K + k] = -1.0f;
    }
  }
  const uint16_t one = f32_to_f16(1.0f);
  // Q8_0 as raw blocks: -128 (which llama.cpp never writes but a file may hold) or 127, by sign
  // for even outputs and against it for odd ones.
  std::vector<uint8_t> q8(row_bytes(DType::kQ8_0, K) * N);
  // Q4_0 as raw blocks: nibbles 0 and 15 (codes -8 and 7) the same way.
  std::vector<uint8_t> q4(row_bytes(DType::kQ4_0, K) * N);
  for (int n = 0; n < N; ++n) {
    for (int b = 0; b < K / 32; ++b) {
      uint8_t* block8 = q8.data() + row_bytes(DType::kQ8_0, K) * n + 34 * b;
      uint8_t* block4 = q4.data() + row_bytes(DType::kQ4_0, K) * n + 18 * b;
      std::memcpy(block8, &one, 2);
      std::memcpy(block4, &one, 2);
      std::memset(block4 + 2, 0, 16);
      for (int i = 0; i < 32; ++i) {
        const bool high = (sign[static_cast<size_t>(32 * b + i)] > 0) == (n % 2 == 0);
        block8[2 + i] = static_cast<uint8_t>(high ? 127 : -128);
        if (high) block4[2 + i % 16] |= static_cast<uint8_t>(i < 16 ? 0x0F : 0xF0);
      }
    }
  }
  // The k-quants from rows of one magnitude, which quantize to their extreme codes.
  std::vector<float> plain(static_cast<size_t>(N) * K);
  for (int n = 0; n < N; ++n) {
    for (int k = 0; k < K; ++k) plain[static_cast<size_t>(n * K + k)] = (n % 2 ? -1 : 1) * sign[k];
  }
  std::vector<std::vector<uint8_t>> kquants;
  std::vector<WeightMatrix> matrices = {WeightMatrix{DType::kQ8_0, N, K, q8.data()},
                                        WeightMatrix{DType::kQ4_0, N, K, q4.data()}};
  for (DType dtype : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ4_1, DType::kQ5_0,
                      DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS}) {
    auto& bytes = kquants.emplace_back(row_bytes(dtype, K) * N);
    for (int n = 0; n < N; ++n) {
      quantize_row(dtype, plain.data() + static_cast<size_t>(n) * K,
                   bytes.data() + row_bytes(dtype, K) * n, K);
    }
    matrices.push_back(WeightMatrix{dtype, N, K, bytes.data()});
  }
  for (const WeightMatrix& matrix : matrices) {
    const PackedMatrix packed(matrix);
    std::vector<float> ref(static_cast<size_t>(M) * N), w(K);
    gemm_packed(Isa::kGeneric, x.data(), M, packed, ref.data(), nullptr);
    for (int j = 0; j < N; ++j) {
      dequantize_row(matrix.dtype, matrix.row(j), w.data(), K);
      for (int m = 0; m < M; ++m) {
        double s = 0.0;
        for (int k = 0; k < K; ++k) s += double{x[static_cast<size_t>(m * K + k)]} * w[k];
        ASSERT_NEAR(ref[static_cast<size_t>(m * N + j)], s, 1e-3 * (1 + std::fabs(s)))
            << to_string(matrix.dtype);
      }
    }
    for (Isa isa : supported_paths()) {
      std::vector<float> y(ref.size(), -7.0f);
      gemm_packed(isa, x.data(), M, packed, y.data(), nullptr);
      ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
          << to_string(isa) << " " << to_string(matrix.dtype);
    }
  }
}

TEST(Gemm, KQuantFactorsAtTheirExtremesSumExactlyOverASuperBlockOnEveryPath) {
  // Raw blocks at the limits of gemm.h's integer sums over a 256-k super-block: Q6_K with every
  // sub-block scale -128 and every code 31 or -32 (|isum| up to 256 * 32 * 127 * 128, about
  // 2^27.0), Q4_K with scales and mins 63 and codes 15. Also stacked behind a Q8_0 or a Q4_0
  // matrix, which makes the super-block 32 k with non-unit scales and a code offset of 128 or 8.
  const int N = 18, K = 512, M = 4;
  std::vector<float> x(static_cast<size_t>(M) * K);
  for (int k = 0; k < K; ++k) {
    x[static_cast<size_t>(k)] = 1.0f;  // every code +127
    x[static_cast<size_t>(K + k)] = -1.0f;
    x[static_cast<size_t>(2 * K + k)] = k % 2 ? 1.0f : -1.0f;
    x[static_cast<size_t>(3 * K + k)] = static_cast<float>(std::sin(0.1 * k));
  }
  const uint16_t one = f32_to_f16(1.0f);
  std::vector<uint8_t> q6(row_bytes(DType::kQ6_K, K) * N), q4k(row_bytes(DType::kQ4_K, K) * N);
  for (int n = 0; n < N; ++n) {
    for (int b = 0; b < K / 256; ++b) {
      uint8_t* block6 = q6.data() + row_bytes(DType::kQ6_K, K) * n + 210 * b;
      std::memset(block6, n % 2 ? 0x00 : 0xFF, 192);  // codes 0 or 63: -32 or 31
      std::memset(block6 + 192, 0x80, 16);            // scales -128
      std::memcpy(block6 + 208, &one, 2);
      uint8_t* block4 = q4k.data() + row_bytes(DType::kQ4_K, K) * n + 144 * b;
      std::memcpy(block4, &one, 2);
      std::memcpy(block4 + 2, &one, 2);
      std::memset(block4 + 4, 0xFF, 12);                   // scales and mins 63
      std::memset(block4 + 16, n % 3 ? 0xFF : 0x0F, 128);  // codes 15 (or 15 and 0)
    }
  }
  // Q2_K with scales and mins 15 and codes 3; Q3_K with scales -32 and codes -4 (or 3); IQ4_XS
  // with scales -32 and level -127 (or 113): 8-bit codes whose sign-trick pairs reach 2 * 127^2.
  std::vector<uint8_t> q2k(row_bytes(DType::kQ2_K, K) * N), q3k(row_bytes(DType::kQ3_K, K) * N),
      iq4(row_bytes(DType::kIQ4_XS, K) * N);
  for (int n = 0; n < N; ++n) {
    for (int b = 0; b < K / 256; ++b) {
      uint8_t* block2 = q2k.data() + row_bytes(DType::kQ2_K, K) * n + 84 * b;
      std::memset(block2, 0xFF, 80);
      std::memcpy(block2 + 80, &one, 2);
      std::memcpy(block2 + 82, &one, 2);
      uint8_t* block3 = q3k.data() + row_bytes(DType::kQ3_K, K) * n + 110 * b;
      std::memset(block3, n % 2 ? 0xFF : 0x00, 96);
      std::memset(block3 + 96, 0, 12);
      std::memcpy(block3 + 108, &one, 2);
      uint8_t* block_iq4 = iq4.data() + row_bytes(DType::kIQ4_XS, K) * n + 136 * b;
      std::memcpy(block_iq4, &one, 2);
      std::memset(block_iq4 + 2, 0, 6);
      std::memset(block_iq4 + 8, n % 2 ? 0xFF : 0x00, 128);
    }
  }
  std::mt19937 rng(12);
  const Weights q8 = random_weights(N, K, DType::kQ8_0, rng);
  const Weights q40 = random_weights(N, K, DType::kQ4_0, rng);
  const Weights q41 = random_weights(N, K, DType::kQ4_1, rng);
  const Weights q50 = random_weights(N, K, DType::kQ5_0, rng);
  const Weights q51 = random_weights(N, K, DType::kQ5_1, rng);
  const WeightMatrix q6_matrix{DType::kQ6_K, N, K, q6.data()};
  const WeightMatrix q4k_matrix{DType::kQ4_K, N, K, q4k.data()};
  const WeightMatrix q2k_matrix{DType::kQ2_K, N, K, q2k.data()};
  const WeightMatrix q3k_matrix{DType::kQ3_K, N, K, q3k.data()};
  const WeightMatrix iq4_matrix{DType::kIQ4_XS, N, K, iq4.data()};
  const std::vector<std::vector<const WeightMatrix*>> stacks = {{&q6_matrix},
                                                                {&q4k_matrix},
                                                                {&q2k_matrix},
                                                                {&q3k_matrix},
                                                                {&iq4_matrix},
                                                                {&q4k_matrix, &iq4_matrix},
                                                                // mins with unit factors, and
                                                                // with Q4_0's or Q5_0's offset
                                                                {&q41.matrix},
                                                                {&q40.matrix, &q41.matrix},
                                                                {&q50.matrix, &q51.matrix},
                                                                {&q8.matrix, &q6_matrix},
                                                                {&q40.matrix, &q4k_matrix},
                                                                {&q4k_matrix, &q6_matrix}};
  for (const auto& stack : stacks) {
    const PackedMatrix packed(stack);
    const int rows = packed.rows();
    std::vector<float> ref(static_cast<size_t>(M) * rows);
    gemm_packed(Isa::kGeneric, x.data(), M, packed, ref.data(), nullptr);
    if (stack.size() == 1) {
      // The whole sums against the dequantized weights (the activation codes are exact here
      // for rows 0-2, so only the float steps round).
      std::vector<float> w(K);
      for (int j = 0; j < rows; ++j) {
        dequantize_row(stack[0]->dtype, stack[0]->row(j), w.data(), K);
        for (int m = 0; m < 3; ++m) {
          double s = 0.0;
          for (int k = 0; k < K; ++k) s += double{x[static_cast<size_t>(m * K + k)]} * w[k];
          ASSERT_NEAR(ref[static_cast<size_t>(m * rows + j)], s, 1e-5 * (1 + std::fabs(s)))
              << to_string(stack[0]->dtype) << " row " << m << " output " << j;
        }
      }
    }
    for (Isa isa : supported_paths()) {
      for (int m : {1, M}) {  // decode and batch tiles
        std::vector<float> y(static_cast<size_t>(m) * rows, -7.0f);
        gemm_packed(isa, x.data(), m, packed, y.data(), nullptr);
        ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
            << to_string(isa) << " " << to_string(stack.back()->dtype) << " of " << stack.size()
            << " M=" << m;
      }
    }
  }
}

TEST(CpuFeatures, ForcingAPathTheCpuLacksFallsBackToOneItHas) {
  const Isa before = active_isa();
  EXPECT_EQ(set_isa(Isa::kGeneric), Isa::kGeneric);
  EXPECT_EQ(active_isa(), Isa::kGeneric);
  const Isa got = set_isa(Isa::kAvx512);
  EXPECT_TRUE(cpu_supports(got));
  set_isa(before);
}

TEST(PackedMatrix, PanelsOfTwoMebibytesOrMoreStartOnAHugePageBoundary) {
  // Decode streams the weights once per token; 2 MiB pages (THP, asked for with madvise) need a
  // 2 MiB-aligned start. A small matrix keeps 64-byte alignment only.
  std::vector<float> big(size_t{1024} * 1024, 0.5f), small(size_t{16} * 64, 0.5f);
  const PackedMatrix large(WeightMatrix{DType::kF32, 1024, 1024, big.data()});
  const PackedMatrix little(WeightMatrix{DType::kF32, 16, 64, small.data()});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.f32_panel(0)) % (uintptr_t{1} << 21), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(little.f32_panel(0)) % 64, 0u);
  EXPECT_EQ(large.f32_panel(63)[1023 * 16 + 15], 0.5f);  // the last weight, packed
}

}  // namespace
}  // namespace pagedllm::cpu
