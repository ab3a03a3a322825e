#include "kernels/cpu/gemm_int8_amx.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/block_quant.h"
#include "format/dequant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_onednn.h"
#include "kernels/random_data.h"

namespace pagedllm::cpu {
namespace {

bool amx_runs() {
  return cpu_supports(Isa::kAmxInt8);
}

std::vector<uint8_t> quantized_matrix(DType dtype, int N, int K, std::mt19937& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(K));
  const size_t rb = row_bytes(dtype, K);
  std::vector<uint8_t> out(rb * static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) {
    for (float& v : row) v = n(rng);
    quantize_row(dtype, row.data(), out.data() + rb * static_cast<size_t>(r), K);
  }
  return out;
}

TEST(AmxInt8, TileConfigurationReachesTheCpuWhole) {
  if (!amx_runs()) GTEST_SKIP() << "AMX-INT8: " << amx_int8_unusable_reason();
  // g++ 12's _tile_loadconfig would let the compiler drop the stores of these fields.
  for (const auto& [rows, block, panels] :
       {std::tuple{16, 32, 2}, std::tuple{5, 16, 1}, std::tuple{1, 32, 2}, std::tuple{15, 16, 2}}) {
    const AmxTileConfig want = amx_int8_config(rows, block, panels);
    EXPECT_EQ(want.rows[0], rows);
    EXPECT_EQ(want.colsb[0], block);
    EXPECT_EQ(want.rows[1], block / 4);
    EXPECT_EQ(want.colsb[4], 64);
    const AmxTileConfig seen = amx_tile_config_round_trip(rows, block, panels);
    EXPECT_EQ(std::memcmp(&seen, &want, sizeof want), 0)
        << "rows " << rows << " block " << block << " panels " << panels;
  }
}

TEST(AmxInt8, OnlyTheHardwareOrTheKernelCanRuleAmxOut) {
  const std::string& reason = amx_int8_unusable_reason();
  EXPECT_EQ(cpu_supports(Isa::kAmxInt8), cpu_supports(Isa::kAvx512Bf16) && reason.empty());
  // A lost configuration or wrong sums would be this code's fault (g++ 12's dropped stores),
  // not the machine's: the probe would then silently fall back to VNNI.
  EXPECT_EQ(reason.find("self-test:"), std::string::npos) << reason;
  if (amx_runs()) {
    EXPECT_EQ(amx_int8_self_test(), nullptr);
  }
}

TEST(AmxInt8, ProductIsBitIdenticalToTheReferenceForEveryFormatAndRowCount) {
  if (!amx_runs()) GTEST_SKIP() << "AMX-INT8: " << amx_int8_unusable_reason();
  std::mt19937 rng(11);
  for (DType dtype :
       {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL,
        DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS}) {
    const int K = block_elements(dtype) == 256 ? 768 : 96, N = 40;
    std::vector<uint8_t> bytes = quantized_matrix(dtype, N, K, rng);
    const PackedMatrix packed(WeightMatrix{dtype, N, K, bytes.data()});
    for (int M : {kAmxMinRows, 15, 16, 17, 33, 50}) {
      const std::vector<float> x = test_data::normal_floats(static_cast<size_t>(M) * K, rng);
      const std::vector<float> bias = test_data::normal_floats(static_cast<size_t>(N), rng);
      std::vector<float> ref(static_cast<size_t>(M) * N), y(ref.size(), -7.0f);
      gemm_packed(Isa::kGeneric, x.data(), M, packed, ref.data(), bias.data());
      gemm_packed(Isa::kAmxInt8, x.data(), M, packed, y.data(), bias.data());
      ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0)
          << to_string(dtype) << " M=" << M;
    }
  }
}

TEST(AmxInt8, MixedKQuantStackOfFourAndSixBitCodesMatchesTheReference) {
  if (!amx_runs()) GTEST_SKIP() << "AMX-INT8: " << amx_int8_unusable_reason();
  // Q4_K_M's fused QKV: Q4_K rows stacked on Q6_K rows, 6-bit codes with mins, 16-k sub-blocks.
  std::mt19937 rng(12);
  const int K = 512, M = 21;
  std::vector<uint8_t> q4 = quantized_matrix(DType::kQ4_K, 32, K, rng);
  std::vector<uint8_t> q6 = quantized_matrix(DType::kQ6_K, 17, K, rng);
  const WeightMatrix a{DType::kQ4_K, 32, K, q4.data()}, b{DType::kQ6_K, 17, K, q6.data()};
  const PackedMatrix packed(std::vector<const WeightMatrix*>{&a, &b});
  ASSERT_EQ(packed.quant_block(), 16);
  ASSERT_TRUE(packed.has_mins());
  const std::vector<float> x = test_data::normal_floats(static_cast<size_t>(M) * K, rng);
  std::vector<float> ref(static_cast<size_t>(M) * 49), y(ref.size());
  gemm_packed(Isa::kGeneric, x.data(), M, packed, ref.data(), nullptr);
  gemm_packed(Isa::kAmxInt8, x.data(), M, packed, y.data(), nullptr);
  EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0);
}

TEST(AmxInt8, ProductsStayRightAfterOneDnnUsedTheTilesOnTheSameThread) {
  if (!amx_runs()) GTEST_SKIP() << "AMX-INT8: " << amx_int8_unusable_reason();
  std::mt19937 rng(13);
  const int K = 1024, N = 512, M = 128;
  std::vector<uint8_t> q8 = quantized_matrix(DType::kQ8_0, N, K, rng);
  const PackedMatrix int8(WeightMatrix{DType::kQ8_0, N, K, q8.data()});
  std::vector<uint16_t> half(static_cast<size_t>(N) * K);
  const std::vector<float> wf = test_data::normal_floats(half.size(), rng);
  for (size_t i = 0; i < half.size(); ++i) half[i] = f32_to_bf16(wf[i]);
  const PackedMatrix bf16(WeightMatrix{DType::kBF16, N, K, half.data()});
  const std::vector<float> x = test_data::normal_floats(static_cast<size_t>(M) * K, rng);
  std::vector<float> ref(static_cast<size_t>(M) * N), y(ref.size()), other(ref.size());
  gemm_packed(Isa::kGeneric, x.data(), M, int8, ref.data(), nullptr);
  for (int round = 0; round < 3; ++round) {
    gemm_packed(Isa::kAmxInt8, x.data(), M, int8, y.data(), nullptr);
    ASSERT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0) << "round " << round;
    // oneDNN's AMX bf16 kernels load their own tile configurations on these threads.
    gemm_packed(x.data(), M, bf16, other.data(), nullptr);
  }
  EXPECT_EQ(uses_onednn(bf16, M), onednn_has_amx());
}

}  // namespace
}  // namespace pagedllm::cpu
