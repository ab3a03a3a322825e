#include "kernels/cpu/bf16_activations.h"

#include <cstring>

namespace pagedllm::cpu {

uint16_t bf16_flushed_bits(uint16_t bf16) {
  const bool denormal = (bf16 & 0x7F80) == 0 && (bf16 & 0x7F) != 0;
  return denormal ? static_cast<uint16_t>(bf16 & 0x8000) : bf16;
}

uint16_t bf16_flushed(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t exponent = bits & 0x7F800000u;
  if (exponent == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000);  // zero or denormal
  if (exponent == 0x7F800000u && (bits & 0x7FFFFF) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN, quieted
  // Branch-free rounding to nearest even; a normal input never rounds to a denormal.
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

void round_activations_to_bf16(Isa isa, const float* x, int M, int K, Bf16Activations& out) {
  const bool dot = isa >= Isa::kAvx512Bf16;
  out.M = M;
  out.pairs = (K + 1) / 2;
  out.data.resize(static_cast<size_t>(M) * out.pairs);
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(M) * K > 65536)
  for (int m = 0; m < M; ++m) {
    const float* xr = x + static_cast<size_t>(m) * K;
    uint32_t* row = out.data.data() + static_cast<size_t>(m) * out.pairs;
    if (dot) {
      round_row_to_bf16_dot(xr, K, row);
      continue;
    }
    for (int i = 0; i < K / 2; ++i) {
      row[i] = static_cast<uint32_t>(bf16_flushed(xr[2 * i])) |
               static_cast<uint32_t>(bf16_flushed(xr[2 * i + 1])) << 16;
    }
    if (K % 2 != 0) row[K / 2] = bf16_flushed(xr[K - 1]);
  }
}

void widen_bf16_activations(Bf16Activations& out) {
  const size_t pairs = static_cast<size_t>(out.pairs);
  out.widened.resize(static_cast<size_t>(out.M) * 2 * pairs);
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(out.M) * out.pairs > 32768)
  for (int m = 0; m < out.M; ++m) {
    const uint32_t* row = out.row(m);
    float* wide = out.widened.data() + static_cast<size_t>(m) * 2 * pairs;
    for (size_t i = 0; i < pairs; ++i) {
      const uint32_t low = row[i] << 16, high = row[i] & 0xFFFF0000u;
      std::memcpy(wide + 2 * i, &low, sizeof low);
      std::memcpy(wide + 2 * i + 1, &high, sizeof high);
    }
  }
}

}  // namespace pagedllm::cpu
