#include "kernels/cpu/quantized_activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace pagedllm::cpu {
namespace {

// Rows whose blocks cover what quantization must treat alike on every path: ordinary values,
// ties at k + 0.5, an all-zero block, denormals, NaN, infinities and values past 127 steps.
std::vector<float> awkward_rows(int M, int K) {
  std::mt19937 rng(21);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(M) * K);
  for (float& v : x) v = n(rng);
  const auto block = [&](int m, int b) { return x.data() + static_cast<size_t>(m) * K + b * 32; };
  float* ties = block(0, 1);  // scale 127 / 127 = 1: codes are the values rounded half to even
  for (int i = 0; i < 32; ++i) ties[i] = static_cast<float>(i - 16) + 0.5f;
  ties[31] = 127.0f;
  std::fill(block(0, 2), block(0, 3), 0.0f);
  std::fill(block(1, 0), block(1, 1), std::numeric_limits<float>::denorm_min());
  block(1, 1)[3] = std::numeric_limits<float>::quiet_NaN();
  block(1, 2)[7] = std::numeric_limits<float>::infinity();
  block(1, 3)[0] = -std::numeric_limits<float>::infinity();
  block(2, 0)[5] = -0.0f;
  std::fill(block(2, 1), block(2, 2), std::numeric_limits<float>::quiet_NaN());
  return x;
}

TEST(QuantizedActivations, EveryIsaPathGivesThePortableCodesScalesAndSums) {
  const int M = 3, K = 4 * 32;
  const std::vector<float> x = awkward_rows(M, K);
  QuantizedActivations ref;
  quantize_activations(Isa::kGeneric, x.data(), M, K, ref);
  // The tie block pins down the rounding: half to even, as nearbyint in the default mode.
  EXPECT_EQ(ref.row(0)[32 + 0], -16);  // -15.5
  EXPECT_EQ(ref.row(0)[32 + 1], -14);  // -14.5
  EXPECT_EQ(ref.row(0)[32 + 17], 2);   // 1.5
  EXPECT_EQ(ref.row(0)[32 + 18], 2);   // 2.5
  EXPECT_EQ(ref.row(0)[32 + 31], 127);
  EXPECT_EQ(ref.scale(0, 64), 0.0f);  // the zero block
  EXPECT_EQ(ref.row(2)[32 + 4], 0);   // a NaN code is 0
  EXPECT_EQ(ref.row(1)[64 + 7], 0);   // inf: scale inf, inverse 0, inf * 0 is NaN
  EXPECT_TRUE(std::isinf(ref.scale(1, 64)));
  int compared = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAvx512Bf16}) {
    if (!cpu_supports(isa)) continue;
    QuantizedActivations q;
    quantize_activations(isa, x.data(), M, K, q);
    EXPECT_EQ(q.codes, ref.codes) << to_string(isa);
    ASSERT_EQ(q.scales.size(), ref.scales.size());
    EXPECT_EQ(std::memcmp(q.scales.data(), ref.scales.data(), q.scales.size() * 4), 0)
        << to_string(isa);
    EXPECT_EQ(q.sum16, ref.sum16) << to_string(isa);
    ++compared;
  }
  if (cpu_supports(Isa::kAvx512)) {
    EXPECT_GE(compared, 1);
  }
}

TEST(QuantizedActivations, ARowGetsTheSameCodesAloneOrInABatch) {
  const int M = 3, K = 4 * 32;
  const std::vector<float> x = awkward_rows(M, K);
  QuantizedActivations all, one;
  quantize_activations(x.data(), M, K, all);
  quantize_activations(x.data() + K, 1, K, one);
  EXPECT_EQ(std::vector<int8_t>(all.row(1), all.row(1) + K), one.codes);
}

}  // namespace
}  // namespace pagedllm::cpu
