#include "kernels/cpu/linear.h"

#include <vector>

#include "kernels/cpu/dequant.h"

namespace pagedllm::cpu {

float dot(const float* a, const float* b, int n) {
  // 16 independent lanes (vectorizable without reassociation), then a fixed tree.
  float acc[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += a[i] * b[i];
  for (int width = 8; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  }
  return acc[0];
}

void linear(const float* x, int M, const WeightMatrix& w, float* y, const float* bias) {
  const int N = w.rows, K = w.cols;
#pragma omp parallel
  {
    std::vector<float> row;
    if (w.dtype != DType::kF32) row.resize(static_cast<size_t>(K));
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* wrow = reinterpret_cast<const float*>(w.row(n));
      if (w.dtype != DType::kF32) {
        dequantize_row(w.dtype, w.row(n), row.data(), K);
        wrow = row.data();
      }
      const float b = bias ? bias[n] : 0.0f;
      for (int m = 0; m < M; ++m) {
        y[static_cast<size_t>(m) * N + n] = dot(x + static_cast<size_t>(m) * K, wrow, K) + b;
      }
    }
  }
}

}  // namespace pagedllm::cpu
