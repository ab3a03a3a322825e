#include "kernels/cpu/bf16_activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace pagedllm {
namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Rows of several lengths (whole 32-wide steps, tails, odd K) holding ties, values next to
// ties, denormals, the largest finite floats, infinities and NaNs: every path gives each
// element's bf16_flushed bits, in pairs, and a zero pads an odd K.
TEST(Bf16Activations, EveryPathRoundsLikeBf16Flushed) {
  const std::vector<float> special = {0.0f,
                                      -0.0f,
                                      1.0f + 0x1p-8f,  // a tie: rounds to even (1)
                                      1.0f + 3 * 0x1p-8f,
                                      from_bits(0x3F818000u),  // tie, odd below: rounds up
                                      from_bits(0x3F807FFFu),
                                      0x1p-130f,  // denormal
                                      -0x1p-140f,
                                      std::numeric_limits<float>::max(),
                                      -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN(),
                                      from_bits(0x7F800001u),   // signalling NaN
                                      from_bits(0x00800000u)};  // smallest normal
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> any_bits;
  int compared = 0;
  for (int K : {1, 2, 13, 31, 32, 33, 64, 95, 770}) {
    const int M = 3;
    std::vector<float> x(static_cast<size_t>(M) * K);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = i % 3 == 0 ? special[i / 3 % special.size()] : from_bits(any_bits(rng));
    }
    for (cpu::Isa isa : {cpu::Isa::kGeneric, cpu::Isa::kAvx2, cpu::Isa::kAvx512,
                         cpu::Isa::kAvx512Vnni, cpu::Isa::kAvx512Bf16}) {
      if (!cpu::cpu_supports(isa)) continue;
      cpu::Bf16Activations out;
      out.data.assign(1000, 0xDEADBEEFu);  // reused buffers hold stale values
      cpu::round_activations_to_bf16(isa, x.data(), M, K, out);
      ASSERT_EQ(out.pairs, (K + 1) / 2);
      for (int m = 0; m < M; ++m) {
        for (int k = 0; k < out.pairs * 2; ++k) {
          const uint32_t pair = out.row(m)[k / 2];
          const auto word = static_cast<uint16_t>(k % 2 == 0 ? pair : pair >> 16);
          const uint16_t want =
              k < K ? cpu::bf16_flushed(x[static_cast<size_t>(m) * K + k]) : uint16_t{0};
          ASSERT_EQ(word, want) << cpu::to_string(isa) << " K=" << K << " row " << m << " k " << k
                                << " input bits "
                                << (k < K ? std::bit_cast<uint32_t>(x[m * K + k]) : 0u);
        }
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 9);
  EXPECT_EQ(cpu::bf16_flushed(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(cpu::bf16_flushed(from_bits(0x3F818000u)), 0x3F82);
  EXPECT_EQ(cpu::bf16_flushed(0x1p-130f), 0x0000);
  EXPECT_EQ(cpu::bf16_flushed(-0x1p-140f), 0x8000);
  EXPECT_EQ(cpu::bf16_flushed(from_bits(0x7F800001u)), 0x7FC0);
}

}  // namespace
}  // namespace pagedllm
