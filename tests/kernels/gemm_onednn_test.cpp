#include "kernels/cpu/gemm_onednn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "format/dequant.h"
#include "kernels/cpu/gemm.h"
#include "kernels/random_data.h"

namespace pagedllm::cpu {
namespace {

struct Bf16Matrix {
  std::vector<uint16_t> bits;
  WeightMatrix matrix;
};

Bf16Matrix random_bf16(int N, int K, std::mt19937& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  Bf16Matrix w;
  for (int i = 0; i < N * K; ++i) w.bits.push_back(f32_to_bf16(n(rng)));
  w.matrix = WeightMatrix{DType::kBF16, N, K, w.bits.data()};
  return w;
}

// Restores the process's backend when a test ends.
class BackendScope {
 public:
  explicit BackendScope(MatmulBackend b) : saved_(matmul_backend()) { set_matmul_backend(b); }
  ~BackendScope() { set_matmul_backend(saved_); }

 private:
  MatmulBackend saved_;
};

// oneDNN adds the same exact bf16 products in another order: each output stays within a few
// f32 roundings of the reference, scaled by the sum of the products' magnitudes.
void expect_close_to_reference(const std::vector<float>& x, int M, const Bf16Matrix& w,
                               const PackedMatrix& packed, const float* bias,
                               const std::vector<float>& got) {
  std::vector<float> want(got.size());
  gemm_packed(Isa::kGeneric, x.data(), M, packed, want.data(), bias);
  const int N = w.matrix.rows, K = w.matrix.cols;
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      double magnitude = bias ? std::fabs(bias[n]) : 0.0;
      for (int k = 0; k < K; ++k) {
        magnitude += std::fabs(bf16_to_f32(bf16_flushed(x[static_cast<size_t>(m) * K + k])) *
                               bf16_to_f32(w.bits[static_cast<size_t>(n) * K + k]));
      }
      const size_t i = static_cast<size_t>(m) * N + n;
      ASSERT_NEAR(got[i], want[i], 4e-6 * magnitude + 1e-30)
          << "M=" << M << " K=" << K << " N=" << N << " m=" << m << " n=" << n;
    }
  }
}

TEST(OneDnnBf16, ProductMatchesTheReferenceOnOddShapesAndTails) {
  std::mt19937 rng(11);
  int compared = 0;
  for (int M : {8, 13, 64}) {
    for (int K : {32, 96, 800}) {
      for (int N : {1, 17, 100, 256}) {
        const Bf16Matrix w = random_bf16(N, K, rng);
        const PackedMatrix packed(w.matrix);
        ASSERT_TRUE(onednn_can_read(packed));
        const std::vector<float> x = test_data::normal_floats(static_cast<size_t>(M) * K, rng);
        const std::vector<float> bias = test_data::normal_floats(static_cast<size_t>(N), rng);
        Bf16Activations xb;
        round_activations_to_bf16(Isa::kGeneric, x.data(), M, K, xb);
        for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
          std::vector<float> y(static_cast<size_t>(M) * N, NAN);
          if (!gemm_bf16_onednn(xb, M, packed, y.data(), b)) {
            GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU";
          }
          expect_close_to_reference(x, M, w, packed, b, y);
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 3 * 3 * 4 * 2);
}

TEST(OneDnnBf16, StackedMatricesAreReadInPlaceLikeOneMatrix) {
  std::mt19937 rng(12);
  const int M = 16, K = 64;
  Bf16Matrix q = random_bf16(40, K, rng), k = random_bf16(24, K, rng);
  const PackedMatrix stacked(std::vector<const WeightMatrix*>{&q.matrix, &k.matrix});
  Bf16Matrix both;  // the two as one matrix, for the reference's magnitudes
  both.bits = q.bits;
  both.bits.insert(both.bits.end(), k.bits.begin(), k.bits.end());
  both.matrix = WeightMatrix{DType::kBF16, 64, K, both.bits.data()};
  const std::vector<float> x = test_data::normal_floats(static_cast<size_t>(M) * K, rng);
  Bf16Activations xb;
  round_activations_to_bf16(Isa::kGeneric, x.data(), M, K, xb);
  std::vector<float> y(static_cast<size_t>(M) * 64);
  if (!gemm_bf16_onednn(xb, M, stacked, y.data(), nullptr)) GTEST_SKIP() << "no bf16 matmul";
  expect_close_to_reference(x, M, both, stacked, nullptr, y);
}

TEST(MatmulBackend, ParsesItsThreeNamesAndRejectsOthers) {
  EXPECT_EQ(parse_matmul_backend("auto"), MatmulBackend::kAuto);
  EXPECT_EQ(parse_matmul_backend("native"), MatmulBackend::kNative);
  EXPECT_EQ(parse_matmul_backend("onednn"), MatmulBackend::kOneDnn);
  EXPECT_THROW(parse_matmul_backend("amx"), std::invalid_argument);
  EXPECT_THROW(parse_matmul_backend(""), std::invalid_argument);
  for (MatmulBackend b : {MatmulBackend::kAuto, MatmulBackend::kNative, MatmulBackend::kOneDnn}) {
    EXPECT_EQ(parse_matmul_backend(to_string(b)), b);
  }
}

TEST(MatmulBackend, OnlyLargeBf16ProductsWithWholeKBlocksGoToOneDnn) {
  std::mt19937 rng(13);
  const Bf16Matrix bf16 = random_bf16(32, 64, rng), odd_k = random_bf16(32, 48, rng);
  std::vector<float> f32(32 * 64, 0.5f);
  const PackedMatrix packed(bf16.matrix), packed_odd(odd_k.matrix),
      packed_f32(WeightMatrix{DType::kF32, 32, 64, f32.data()});
  const BackendScope scope(MatmulBackend::kOneDnn);
  EXPECT_TRUE(uses_onednn(packed, kOneDnnMinRows));
  EXPECT_TRUE(uses_onednn(packed, 512));
  EXPECT_FALSE(uses_onednn(packed, kOneDnnMinRows - 1));  // decode stays native
  EXPECT_FALSE(uses_onednn(packed_odd, 64));              // 48 is not whole 32-k blocks
  EXPECT_FALSE(uses_onednn(packed_f32, 64));
  set_matmul_backend(MatmulBackend::kNative);
  EXPECT_FALSE(uses_onednn(packed, 512));
  set_matmul_backend(MatmulBackend::kAuto);
  EXPECT_EQ(uses_onednn(packed, 512), active_isa() >= Isa::kAvx512Bf16 && onednn_has_amx());
}

TEST(MatmulBackend, GemmPackedFollowsTheBackend) {
  std::mt19937 rng(14);
  const int M = 24, K = 96, N = 48;
  const Bf16Matrix w = random_bf16(N, K, rng);
  const PackedMatrix packed(w.matrix);
  const std::vector<float> x = test_data::normal_floats(static_cast<size_t>(M) * K, rng);
  std::vector<float> native(static_cast<size_t>(M) * N), onednn(native.size()),
      routed(native.size());
  gemm_packed(active_isa(), x.data(), M, packed, native.data(), nullptr);
  Bf16Activations xb;
  round_activations_to_bf16(Isa::kGeneric, x.data(), M, K, xb);
  if (!gemm_bf16_onednn(xb, M, packed, onednn.data(), nullptr)) GTEST_SKIP() << "no bf16 matmul";
  {
    const BackendScope scope(MatmulBackend::kNative);
    gemm_packed(x.data(), M, packed, routed.data());
    EXPECT_EQ(0, std::memcmp(routed.data(), native.data(), routed.size() * sizeof(float)));
  }
  {
    const BackendScope scope(MatmulBackend::kOneDnn);
    gemm_packed(x.data(), M, packed, routed.data());
    EXPECT_EQ(0, std::memcmp(routed.data(), onednn.data(), routed.size() * sizeof(float)));
  }
}

TEST(MatmulBackend, DescriptionNamesWhatBf16ProductsRunOn) {
  const BackendScope scope(MatmulBackend::kNative);
  EXPECT_EQ(describe_matmul_backend(), "native:native");
  set_matmul_backend(MatmulBackend::kOneDnn);
  EXPECT_EQ(describe_matmul_backend(), "onednn:onednn[" + onednn_isa() + "]");
}

}  // namespace
}  // namespace pagedllm::cpu
