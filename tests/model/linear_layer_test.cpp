#include "model/linear_layer.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "format/dequant.h"
#include "kernels/cpu/gemm.h"

namespace pagedllm {
namespace {

// A quantized weight and the bytes behind it.
struct QuantizedWeight {
  std::vector<uint8_t> bytes;
  WeightMatrix matrix;
  QuantizedWeight(DType dtype, int N, int K, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(K));
    const size_t stride = row_bytes(dtype, K);
    bytes.resize(stride * static_cast<size_t>(N));
    for (int r = 0; r < N; ++r) {
      for (float& v : row) v = normal(rng);
      quantize_row(dtype, row.data(), bytes.data() + stride * static_cast<size_t>(r), K);
    }
    matrix = WeightMatrix{dtype, N, K, bytes.data()};
  }
};

std::vector<float> activations(int M, int K) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(M) * K);
  for (float& v : x) v = uniform(rng);
  return x;
}

// Each weight's own product, rows side by side as the layer lays them out, with its bias.
std::vector<float> products_one_by_one(const std::vector<const WeightMatrix*>& weights,
                                       const std::vector<std::vector<float>>& biases,
                                       const std::vector<float>& x, int M) {
  int total = 0;
  for (const WeightMatrix* w : weights) total += w->rows;
  std::vector<float> y(static_cast<size_t>(M) * total);
  int offset = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const cpu::PackedMatrix alone(*weights[i]);
    std::vector<float> part(static_cast<size_t>(M) * weights[i]->rows);
    cpu::gemm_packed(x.data(), M, alone, part.data(), biases[i].data());
    for (int m = 0; m < M; ++m) {
      for (int j = 0; j < weights[i]->rows; ++j)
        y[static_cast<size_t>(m) * total + offset + j] =
            part[static_cast<size_t>(m) * alone.rows() + j];
    }
    offset += weights[i]->rows;
  }
  return y;
}

std::vector<float> bias_of(int rows, float base) {
  std::vector<float> b(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) b[static_cast<size_t>(r)] = base + 0.01f * static_cast<float>(r);
  return b;
}

// A Q4_K_M file's QKV in the layers that keep V in Q6_K: stacked as one matrix, Q and K would
// widen to V's 6-bit codes.
TEST(LinearLayer, QkvOfQ4KWithAQ6KValuePacksQAndKApartFromV) {
  const int K = 512;
  const QuantizedWeight q(DType::kQ4_K, 48, K, 1), k(DType::kQ4_K, 32, K, 2),
      v(DType::kQ6_K, 32, K, 3);
  const std::vector<const WeightMatrix*> weights{&q.matrix, &k.matrix, &v.matrix};
  const std::vector<std::vector<float>> biases{bias_of(48, 0.5f), bias_of(32, -1.0f),
                                               bias_of(32, 2.0f)};
  const LinearLayer layer(weights, {biases[0].data(), biases[1].data(), biases[2].data()});
  EXPECT_EQ(layer.out_features(), 112);
  const cpu::PackedMatrix q_and_k({&q.matrix, &k.matrix}), value(v.matrix), all(weights);
  EXPECT_EQ(q_and_k.code_bits(), 4);
  EXPECT_EQ(all.code_bits(), 6);
  EXPECT_EQ(layer.weight_bytes(), q_and_k.bytes() + value.bytes());
  EXPECT_LT(layer.weight_bytes(), all.bytes());
  for (const int M : {1, 7, 20}) {
    const std::vector<float> x = activations(M, K);
    std::vector<float> y(static_cast<size_t>(M) * layer.out_features());
    layer.apply(x.data(), M, y.data());
    EXPECT_EQ(y, products_one_by_one(weights, biases, x, M)) << "M = " << M;
  }
}

TEST(LinearLayer, WeightsOfOneFormatPackAsOneMatrix) {
  const int K = 256;
  const QuantizedWeight gate(DType::kQ4_K, 64, K, 4), up(DType::kQ4_K, 64, K, 5);
  const std::vector<const WeightMatrix*> weights{&gate.matrix, &up.matrix};
  const LinearLayer layer(weights);
  EXPECT_EQ(layer.weight_bytes(), cpu::PackedMatrix(weights).bytes());
  const int M = 9;
  const std::vector<float> x = activations(M, K);
  std::vector<float> y(static_cast<size_t>(M) * layer.out_features());
  layer.apply(x.data(), M, y.data());
  const std::vector<float> zeros(64, 0.0f);
  EXPECT_EQ(y, products_one_by_one(weights, {zeros, zeros}, x, M));
}

}  // namespace
}  // namespace pagedllm
