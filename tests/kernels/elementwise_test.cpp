#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/rope.h"
#include "kernels/isa_guard.h"
#include "model/rope.h"

#include "kernels/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace pagedllm {
namespace {

std::vector<float> normal_values(size_t n, unsigned seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// 40 rows of 2100: large enough that the rows are split over the threads.
TEST(Swiglu, MultipliesTheSiluOfEachRowsGateHalfByItsUpHalf) {
  const int tokens = 40, hidden = 2100;
  const auto gate_up = normal_values(static_cast<size_t>(tokens) * 2 * hidden, 1, 4.0f);
  std::vector<float> out(static_cast<size_t>(tokens) * hidden);
  cpu::swiglu(gate_up.data(), tokens, hidden, out.data());
  for (int t = 0; t < tokens; ++t) {
    for (int i = 0; i < hidden; ++i) {
      const double g = gate_up[static_cast<size_t>(t) * 2 * hidden + i];
      const double up = gate_up[static_cast<size_t>(t) * 2 * hidden + hidden + i];
      const double want = g / (1.0 + std::exp(-g)) * up;
      ASSERT_NEAR(out[static_cast<size_t>(t) * hidden + i], want, 1e-5 * std::abs(want) + 1e-30)
          << "row " << t << " column " << i;
    }
  }
  // A row computed alone gives the bits it gets in the split batch.
  std::vector<float> alone(static_cast<size_t>(hidden));
  cpu::swiglu(gate_up.data() + static_cast<size_t>(37) * 2 * hidden, 1, hidden, alone.data());
  EXPECT_EQ(std::memcmp(alone.data(), out.data() + static_cast<size_t>(37) * hidden,
                        alone.size() * sizeof(float)),
            0);
}

using test::IsaGuard;

// Rows of odd lengths (vector tails) over gates from -100 to 100, with zeros of both signs and
// inputs where exp underflows: every path gives the portable loop's bits.
TEST(Swiglu, EveryIsaPathIsBitIdenticalToThePortableLoop) {
  IsaGuard guard;
  int compared = 0;
  for (int hidden : {1, 15, 16, 17, 100, 2049}) {
    const int tokens = 3;
    auto gate_up = normal_values(static_cast<size_t>(tokens) * 2 * hidden, 7, 30.0f);
    gate_up[0] = 0.0f;
    if (hidden > 2) {
      gate_up[1] = -0.0f;
      gate_up[2] = -100.0f;
    }
    std::vector<float> ref(static_cast<size_t>(tokens) * hidden), out(ref.size());
    cpu::set_isa(cpu::Isa::kGeneric);
    cpu::swiglu(gate_up.data(), tokens, hidden, ref.data());
    for (cpu::Isa isa :
         {cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kAvx512Vnni, cpu::Isa::kAvx512Bf16}) {
      if (!cpu::cpu_supports(isa)) continue;
      cpu::set_isa(isa);
      cpu::swiglu(gate_up.data(), tokens, hidden, out.data());
      ASSERT_EQ(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)), 0)
          << cpu::to_string(isa) << " hidden " << hidden;
      ++compared;
    }
  }
  if (cpu::cpu_supports(cpu::Isa::kAvx512)) {
    EXPECT_GE(compared, 18);
  }
}

TEST(AddInplace, AddsEveryElementOfALargeSplitArray) {
  const size_t n = 100003;
  auto x = normal_values(n, 2);
  const auto y = normal_values(n, 3);
  const auto before = x;
  cpu::add_inplace(x.data(), y.data(), static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], before[i] + y[i]) << "element " << i;
}

TEST(RmsNorm, ScalesEachRowToUnitRootMeanSquareTimesTheWeight) {
  const int rows = 20, width = 300;
  const float eps = 1e-5f;
  const auto x = normal_values(static_cast<size_t>(rows) * width, 4, 3.0f);
  const auto weight = normal_values(static_cast<size_t>(width), 5);
  std::vector<float> out(x.size());
  cpu::rms_norm(x.data(), weight.data(), out.data(), rows, width, eps);
  for (int r = 0; r < rows; ++r) {
    double mean_sq = 0;
    for (int i = 0; i < width; ++i) {
      const double v = x[static_cast<size_t>(r) * width + i];
      mean_sq += v * v / width;
    }
    const double scale = 1.0 / std::sqrt(mean_sq + eps);
    for (int i = 0; i < width; ++i) {
      const size_t at = static_cast<size_t>(r) * width + i;
      const double want = x[at] * scale * weight[static_cast<size_t>(i)];
      ASSERT_NEAR(out[at], want, 1e-5 * std::abs(want) + 1e-7) << "row " << r << " column " << i;
    }
  }
  std::vector<float> alone(static_cast<size_t>(width));
  cpu::rms_norm(x.data() + 13 * width, weight.data(), alone.data(), 1, width, eps);
  EXPECT_EQ(std::memcmp(alone.data(), out.data() + 13 * width, alone.size() * sizeof(float)), 0);
}

// Pair (a, b) of head h at position p turns by the angle p * inv_freq[i]: NeoX pairs i with
// i + D/2, the interleaved style pairs 2i with 2i + 1.
TEST(Rope, RotatesEachPairByItsPositionTimesItsFrequency) {
  const int tokens = 12, heads = 3, D = 8;
  ModelConfig config;
  config.head_dim = D;
  config.rope_theta = 10000.0f;
  const auto inv_freq = rope_inverse_frequencies(config);
  ASSERT_EQ(inv_freq.size(), static_cast<size_t>(D / 2));
  EXPECT_FLOAT_EQ(inv_freq[1], static_cast<float>(std::pow(10000.0, -2.0 / D)));
  std::vector<int32_t> positions(tokens);
  for (int t = 0; t < tokens; ++t) positions[static_cast<size_t>(t)] = 5 * t + 3;
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
    const auto x = normal_values(static_cast<size_t>(tokens) * heads * D, 6);
    auto y = x;
    cpu::RopeAngles angles;
    cpu::rope_angles(positions, inv_freq, angles);
    ASSERT_EQ(angles.half, D / 2);
    cpu::apply_rope(y.data(), tokens, heads, angles, style);
    for (int t = 0; t < tokens; ++t) {
      for (int h = 0; h < heads; ++h) {
        const size_t base = (static_cast<size_t>(t) * heads + h) * D;
        for (int i = 0; i < D / 2; ++i) {
          const size_t a = base + (style == RopeStyle::kNeox ? i : 2 * i);
          const size_t b = base + (style == RopeStyle::kNeox ? i + D / 2 : 2 * i + 1);
          const double angle = positions[static_cast<size_t>(t)] * double{inv_freq[i]};
          EXPECT_NEAR(y[a], x[a] * std::cos(angle) - x[b] * std::sin(angle), 1e-5);
          EXPECT_NEAR(y[b], x[a] * std::sin(angle) + x[b] * std::cos(angle), 1e-5);
        }
      }
    }
  }
}

// Head sizes with vector tails (half 4, 20, 36) and without (32, 64), both styles, large
// positions: every path gives the portable loop's bits.
TEST(Rope, EveryIsaPathIsBitIdenticalToThePortableLoop) {
  IsaGuard guard;
  int compared = 0;
  for (int D : {8, 40, 64, 72, 128}) {
    const int tokens = 5, heads = 3;
    ModelConfig config;
    config.head_dim = D;
    config.rope_theta = 500000.0f;
    const auto inv_freq = rope_inverse_frequencies(config);
    const std::vector<int32_t> positions = {0, 1, 77, 4095, 131071};
    cpu::RopeAngles angles;
    cpu::rope_angles(positions, inv_freq, angles);
    for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
      const auto x = normal_values(static_cast<size_t>(tokens) * heads * D, 9, 50.0f);
      cpu::set_isa(cpu::Isa::kGeneric);
      auto ref = x;
      cpu::apply_rope(ref.data(), tokens, heads, angles, style);
      for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kAvx512Bf16}) {
        if (!cpu::cpu_supports(isa)) continue;
        cpu::set_isa(isa);
        auto y = x;
        cpu::apply_rope(y.data(), tokens, heads, angles, style);
        ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)), 0)
            << cpu::to_string(isa) << " D=" << D << " style " << static_cast<int>(style);
        ++compared;
      }
    }
  }
  if (cpu::cpu_supports(cpu::Isa::kAvx512)) {
    EXPECT_GE(compared, 20);
  }
}

}  // namespace
}  // namespace pagedllm
