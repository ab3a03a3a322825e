// OCP FP8 E4M3 (the 8-bit KV cache): the known values, every code back and forth, and encoding
// as the nearest code (ties to an even code) with saturation, checked against a search over all
// codes on a million random floats.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "format/dequant.h"

namespace pagedllm {
namespace {

TEST(Fp8E4M3, DecodesTheFormatsLandmarks) {
  EXPECT_EQ(fp8_e4m3_to_f32(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(fp8_e4m3_to_f32(0x80)));
  EXPECT_EQ(fp8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0xB8), -1.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_f32(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3_to_f32(0x08), std::ldexp(1.0f, -6));  // the smallest normal
  EXPECT_EQ(fp8_e4m3_to_f32(0x7E), 448.0f);                // the largest
  EXPECT_EQ(fp8_e4m3_to_f32(0x3D), 1.625f);
}

TEST(Fp8E4M3, EveryNumberCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;  // NaN
    const float value = fp8_e4m3_to_f32(static_cast<uint8_t>(code));
    EXPECT_EQ(f32_to_fp8_e4m3(value), code) << "code " << code << " value " << value;
  }
  EXPECT_EQ(f32_to_fp8_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7F, 0x7F);
}

// The nearest code by exhaustive search; ties go to the code with an even mantissa.
uint8_t nearest_code(float x) {
  int best = -1;
  double best_error = 0;
  for (int code = 0; code < 0x7F; ++code) {
    const double error = std::fabs(std::fabs(static_cast<double>(x)) - fp8_e4m3_to_f32(code));
    if (best < 0 || error < best_error || (error == best_error && (code & 1) == 0)) {
      best = code;
      best_error = error;
    }
  }
  return static_cast<uint8_t>(best | (std::signbit(x) ? 0x80 : 0));
}

TEST(Fp8E4M3, EncodesToTheNearestCodeTiesToEvenAndSaturates) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> log2_magnitude(-12.0f, 10.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::exp2(log2_magnitude(rng)) * (rng() % 2 ? 1.0f : -1.0f);
    ASSERT_EQ(f32_to_fp8_e4m3(x), nearest_code(x)) << x;
  }
  // Exact ties between neighbours: 1 + 1/16 lies between 1 and 1.125 (to 1, even), 1 + 3/16
  // between 1.125 and 1.25 (to 1.25, even).
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.0625f)), 1.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.1875f)), 1.25f);
  EXPECT_EQ(f32_to_fp8_e4m3(1e6f), 0x7E);
  EXPECT_EQ(f32_to_fp8_e4m3(-1e6f), 0xFE);
  EXPECT_EQ(f32_to_fp8_e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(f32_to_fp8_e4m3(460.0f), 0x7E);
  EXPECT_EQ(f32_to_fp8_e4m3(1e-9f), 0x00);
}

}  // namespace
}  // namespace pagedllm
