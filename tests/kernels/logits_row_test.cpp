// The sampler's row passes: every ISA path gives the portable loop's bits (exponentials, block
// sums and totals, the division by a temperature), masked -infinity logits get weight exactly
// 0, and the scans find what a plain loop finds, on rows of every tail length.
#include "kernels/cpu/logits_row.h"
#include "kernels/isa_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/exp_nonpositive.h"

namespace pagedllm {
namespace {

using test::IsaGuard;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> logits_row(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> spread(0.0f, 4.0f);
  std::vector<float> row(n);
  for (float& l : row) l = spread(rng);
  for (size_t i = 3; i < n; i += 97) row[i] = -kInf;  // masked tokens
  if (n > 5) row[5] = row[0];                         // a tie
  return row;
}

struct PassResults {
  float max;
  double sum;
  std::vector<float> weights;
  std::vector<double> blocks;
  int64_t first;
  std::vector<int32_t> above;
  std::vector<float> divided;  // by a temperature of 0.7
};

PassResults run_passes(const std::vector<float>& row) {
  const auto n = static_cast<int64_t>(row.size());
  PassResults r;
  r.max = cpu::row_max(row.data(), n);
  r.weights.resize(row.size());
  r.blocks.resize(static_cast<size_t>((n + cpu::kExpBlock - 1) / cpu::kExpBlock));
  r.sum = cpu::exp_shifted(row.data(), n, r.max, r.weights.data(), r.blocks.data());
  r.first = cpu::first_above(row.data(), n, 6.0f);
  r.above.resize(row.size() + 16);
  r.above.resize(static_cast<size_t>(cpu::collect_above(row.data(), n, 2.5f, r.above.data())));
  r.divided = row;
  cpu::divide_row(r.divided.data(), n, 0.7f);
  return r;
}

TEST(LogitsRow, PortableLoopIsExactAndMaskedLogitsWeighNothing) {
  IsaGuard guard;
  cpu::set_isa(cpu::Isa::kGeneric);
  const std::vector<float> row = logits_row(5000, 1);
  const PassResults r = run_passes(row);
  EXPECT_EQ(r.max, *std::max_element(row.begin(), row.end()));
  double sum = 0.0;
  for (size_t i = 0; i < row.size(); ++i) {
    const float want = std::isinf(row[i]) ? 0.0f : cpu::exp_nonpositive(row[i] - r.max);
    ASSERT_EQ(r.weights[i], want) << i;
    EXPECT_NEAR(r.weights[i], std::exp(static_cast<double>(row[i] - r.max)), 1e-6);
    sum += r.weights[i];
  }
  EXPECT_NEAR(r.sum, sum, 1e-6 * sum);  // float lanes within a block
  double blocks = 0.0;
  for (double b : r.blocks) blocks += b;
  EXPECT_EQ(blocks, r.sum);
  const auto first = std::find_if(row.begin(), row.end(), [](float l) { return l > 6.0f; });
  EXPECT_EQ(r.first, first - row.begin());
  std::vector<int32_t> above;
  for (size_t i = 0; i < row.size(); ++i)
    if (row[i] > 2.5f) above.push_back(static_cast<int32_t>(i));
  EXPECT_EQ(r.above, above);
  for (size_t i = 0; i < row.size(); ++i) ASSERT_EQ(r.divided[i], row[i] / 0.7f) << i;
}

TEST(LogitsRow, EveryIsaPathIsBitIdenticalToThePortableLoop) {
  IsaGuard guard;
  int compared = 0;
  for (size_t n : {1u, 7u, 8u, 15u, 16u, 17u, 1023u, 1024u, 1025u, 3000u, 151936u}) {
    const std::vector<float> row = logits_row(n, static_cast<uint32_t>(n));
    cpu::set_isa(cpu::Isa::kGeneric);
    const PassResults want = run_passes(row);
    for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
      if (!cpu::cpu_supports(isa)) continue;
      cpu::set_isa(isa);
      const PassResults got = run_passes(row);
      ASSERT_EQ(got.max, want.max) << cpu::to_string(isa) << " n " << n;
      ASSERT_EQ(got.sum, want.sum) << cpu::to_string(isa) << " n " << n;
      ASSERT_EQ(got.blocks, want.blocks) << cpu::to_string(isa) << " n " << n;
      ASSERT_EQ(std::memcmp(got.weights.data(), want.weights.data(), n * sizeof(float)), 0)
          << cpu::to_string(isa) << " n " << n;
      ASSERT_EQ(got.first, want.first) << cpu::to_string(isa) << " n " << n;
      ASSERT_EQ(got.above, want.above) << cpu::to_string(isa) << " n " << n;
      ASSERT_EQ(std::memcmp(got.divided.data(), want.divided.data(), n * sizeof(float)), 0)
          << cpu::to_string(isa) << " n " << n;
      ++compared;
    }
  }
  if (cpu::cpu_supports(cpu::Isa::kAvx2)) {
    EXPECT_GT(compared, 0);
  }
}

TEST(LogitsRow, AnEmptyRowHasNoMaximumAndNoWeight) {
  EXPECT_EQ(cpu::row_max(nullptr, 0), -kInf);
  EXPECT_EQ(cpu::exp_shifted(nullptr, 0, 0.0f, nullptr, nullptr), 0.0);
  EXPECT_EQ(cpu::first_above(nullptr, 0, 0.0f), 0);
}

}  // namespace
}  // namespace pagedllm
