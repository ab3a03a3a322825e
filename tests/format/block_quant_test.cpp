#include "format/block_quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "format/dequant.h"

namespace pagedllm::cpu {
namespace {

const DType kBlockFormats[] = {DType::kQ8_0, DType::kQ4_0,   DType::kQ4_1,   DType::kQ5_0,
                               DType::kQ5_1, DType::kIQ4_NL, DType::kQ2_K,   DType::kQ3_K,
                               DType::kQ4_K, DType::kQ5_K,   DType::kIQ4_XS, DType::kQ6_K};

// Worst error of an encode/decode round trip, relative to the row's largest magnitude.
double round_trip_error(DType dtype, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(row_bytes(dtype, static_cast<int64_t>(x.size())));
  std::vector<float> back(x.size());
  quantize_row(dtype, x.data(), bytes.data(), static_cast<int64_t>(x.size()));
  dequantize_row(dtype, bytes.data(), back.data(), static_cast<int64_t>(x.size()));
  double worst = 0.0, amax = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, double(std::fabs(x[i] - back[i])));
    amax = std::max(amax, double(std::fabs(x[i])));
  }
  return worst / amax;
}

TEST(BlockQuant, RoundTripErrorShrinksWithTheFormatsBits) {
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(1024);
  for (float& v : x) v = n(rng);
  // Step / 2 per format over the row's range, with room for the coarse sub-block scales.
  EXPECT_LT(round_trip_error(DType::kQ8_0, x), 0.01);
  EXPECT_LT(round_trip_error(DType::kQ6_K, x), 0.04);
  EXPECT_LT(round_trip_error(DType::kQ5_K, x), 0.06);
  EXPECT_LT(round_trip_error(DType::kQ4_K, x), 0.12);
  EXPECT_LT(round_trip_error(DType::kQ4_0, x), 0.15);
  EXPECT_GT(round_trip_error(DType::kQ4_K, x), round_trip_error(DType::kQ6_K, x));
  EXPECT_LT(round_trip_error(DType::kQ5_1, x), 0.035);
  EXPECT_LT(round_trip_error(DType::kQ5_0, x), 0.04);
  EXPECT_LT(round_trip_error(DType::kQ4_1, x), 0.07);
  EXPECT_LT(round_trip_error(DType::kIQ4_NL, x), 0.1);
  EXPECT_LT(round_trip_error(DType::kIQ4_XS, x), 0.1);
  EXPECT_LT(round_trip_error(DType::kQ3_K, x), 0.2);
  EXPECT_LT(round_trip_error(DType::kQ2_K, x), 0.35);
  EXPECT_GT(round_trip_error(DType::kQ2_K, x), round_trip_error(DType::kQ3_K, x));
  EXPECT_GT(round_trip_error(DType::kQ3_K, x), round_trip_error(DType::kQ4_K, x));
}

TEST(BlockQuant, CodesStayInTheFormatsRangeAndDecodeAsScaleTimesCodeMinusMin) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-3.0f, 5.0f);
  for (DType dtype : kBlockFormats) {
    const int64_t n = 512;
    std::vector<float> x(n), decoded(n);
    for (float& v : x) v = u(rng);
    std::vector<uint8_t> bytes(row_bytes(dtype, n));
    quantize_row(dtype, x.data(), bytes.data(), n);
    const int sub = sub_block_elements(dtype);
    std::vector<int8_t> codes(n);
    std::vector<float> scales(n / sub), mins(n / sub);
    unpack_blocks(dtype, bytes.data(), n, codes.data(), scales.data(), mins.data());
    dequantize_row(dtype, bytes.data(), decoded.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_GE(codes[i], min_code(dtype)) << to_string(dtype);
      ASSERT_LE(codes[i], max_code(dtype)) << to_string(dtype);
      ASSERT_EQ(decoded[i], scales[i / sub] * codes[i] - mins[i / sub]) << to_string(dtype);
    }
    if (!has_mins(dtype)) {
      EXPECT_TRUE(std::all_of(mins.begin(), mins.end(), [](float m) { return m == 0.0f; }));
    }
  }
}

// A hand-built Q4_K super-block: d = 0.5, dmin = 0.25; sub-block 5 has the 6-bit scale 37 and
// min 50, whose high bits live in the first eight bytes (llama.cpp's get_scale_min_k4).
TEST(BlockQuant, Q4KReadsSixBitScalesAndMinsOfTheUpperSubBlocks) {
  std::vector<uint8_t> block(block_bytes(DType::kQ4_K), 0);
  const uint16_t half = f32_to_f16(0.5f), quarter = f32_to_f16(0.25f);
  std::memcpy(block.data(), &half, 2);
  std::memcpy(block.data() + 2, &quarter, 2);
  uint8_t* packed = block.data() + 4;
  const int scale = 37, min = 50;  // 0b100101, 0b110010
  packed[5 + 4] = static_cast<uint8_t>((scale & 0xF) | ((min & 0xF) << 4));
  packed[5 - 4] = static_cast<uint8_t>((scale >> 4) << 6);
  packed[5] = static_cast<uint8_t>((min >> 4) << 6);
  // Sub-block 5 is the high nibbles of qs[64..96); element 160 + 3 gets code 9.
  block[16 + 64 + 3] = 9 << 4;
  std::vector<float> y(256);
  dequantize_row(DType::kQ4_K, block.data(), y.data(), 256);
  EXPECT_EQ(y[163], 0.5f * 37 * 9 - 0.25f * 50);
  EXPECT_EQ(y[160], -0.25f * 50);
  EXPECT_EQ(y[0], 0.0f);  // sub-block 0: scale 0, min 0
}

// Q6_K: element 64 + 1 of the first half takes the high nibble of ql[1] and bits 4-5 of qh[1].
TEST(BlockQuant, Q6KCombinesLowNibblesHighBitsAndSignedScales) {
  std::vector<uint8_t> block(block_bytes(DType::kQ6_K), 0);
  block[1] = 0xA0;            // low 4 bits of the code: 0xA
  block[128 + 1] = 0x2 << 4;  // high 2 bits: 0b10 -> code 0x2A = 42, minus 32 = 10
  block[192 + 4] = static_cast<uint8_t>(int8_t{-3});  // sub-block 4 covers elements 64..79
  const uint16_t d = f32_to_f16(0.125f);
  std::memcpy(block.data() + 208, &d, 2);
  std::vector<float> y(256);
  dequantize_row(DType::kQ6_K, block.data(), y.data(), 256);
  EXPECT_EQ(y[65], 0.125f * -3 * 10);
  EXPECT_EQ(y[64], 0.125f * -3 * -32);  // every zero code decodes to -32
}

}  // namespace
}  // namespace pagedllm::cpu
