#include "kernels/cpu/quantized_activations.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pagedllm::cpu {

namespace {

void quantize_block(const float* x, int block, int8_t* q, float& scale) {
  float amax = 0.0f;
  for (int i = 0; i < block; ++i) amax = std::max(amax, std::fabs(x[i]));
  scale = amax / 127.0f;
  const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < block; ++i) {
    const float v = std::nearbyint(x[i] * inverse);
    // Also maps NaN (from a broken model file) to 0 rather than to an undefined conversion.
    q[i] = static_cast<int8_t>(v >= -127.0f && v <= 127.0f ? v
                               : v > 0.0f                  ? 127.0f
                               : v < 0.0f                  ? -127.0f
                                                           : 0.0f);
  }
}

// The portable path: quantize_block per block, then the codes' sums by 16.
void quantize_row_portable(const float* x, int K, int block, int8_t* codes, float* scales,
                           int32_t* sum16) {
  for (int b = 0; b < K / block; ++b)
    quantize_block(x + b * block, block, codes + b * block, scales[b]);
  for (int s = 0; s < K / 16; ++s) {
    int32_t total = 0;
    for (int i = 0; i < 16; ++i) total += codes[s * 16 + i];
    sum16[s] = total;
  }
}

}  // namespace

void quantize_activations(Isa isa, const float* x, int M, int K, QuantizedActivations& out,
                          int block) {
  if (block != QuantizedActivations::kMinBlock && block != QuantizedActivations::kMaxBlock)
    throw std::invalid_argument("activation blocks are 32 or 256 values");
  out.M = M;
  out.K = K;
  out.block = block;
  const size_t blocks = static_cast<size_t>(K / block);
  out.codes.resize(static_cast<size_t>(M) * K);
  out.scales.resize(static_cast<size_t>(M) * blocks);
  out.sum16.resize(static_cast<size_t>(M) * (K / 16));
  const auto row = isa >= Isa::kAvx512 ? quantize_row_avx512
                   : isa >= Isa::kAvx2 ? quantize_row_avx2
                                       : quantize_row_portable;
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(M) * K > 65536)
  for (int m = 0; m < M; ++m) {
    row(x + static_cast<size_t>(m) * K, K, block, out.codes.data() + static_cast<size_t>(m) * K,
        out.scales.data() + static_cast<size_t>(m) * blocks,
        out.sum16.data() + static_cast<size_t>(m) * (K / 16));
  }
}

void quantize_activations(const float* x, int M, int K, QuantizedActivations& out, int block) {
  quantize_activations(active_isa(), x, M, K, out, block);
}

}  // namespace pagedllm::cpu
