// Activations quantized for the int8 dot products against block-quantized weights, as llama.cpp
// quantizes them: per row, blocks of `block` values (32, as Q8_0, for Q8_0 and Q4_0 weights; 256,
// as Q8_K, for the k-quants) with scale d = max|x| / 127 and codes round(x / d) in [-127, 127].
// Each row is quantized alone, so a row's codes (and so its GEMM result) do not depend on the
// batch it is in.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_features.h"

namespace pagedllm::cpu {

struct QuantizedActivations {
  static constexpr int kMinBlock = 32, kMaxBlock = 256;
  int M = 0, K = 0, block = kMinBlock;
  std::vector<int8_t> codes;   // [M][K]
  std::vector<float> scales;   // [M][K / block]
  std::vector<int32_t> sum16;  // [M][K / 16]: sums of the codes over 16 consecutive k

  const int8_t* row(int m) const { return codes.data() + static_cast<size_t>(m) * K; }
  float scale(int m, int k) const {
    return scales[static_cast<size_t>(m) * (K / block) + static_cast<size_t>(k / block)];
  }
  // Sum of the codes of row m over [k, k + n), k and n multiples of 16.
  int32_t sum(int m, int k, int n) const {
    const int32_t* s = sum16.data() + static_cast<size_t>(m) * (K / 16) + k / 16;
    int32_t total = 0;
    for (int i = 0; i < n / 16; ++i) total += s[i];
    return total;
  }
  // Four codes of row m from k as one 32-bit lane (what VNNI broadcasts).
  int32_t quad(int m, int k) const {
    int32_t v;
    std::memcpy(&v, row(m) + k, sizeof v);
    return v;
  }
};

// Quantizes x[M][K] (K a multiple of block, block 32 or 256) into out, reusing its buffers; `isa`
// picks the code path (every path gives the same bits), large inputs are split over the OpenMP
// threads by row.
void quantize_activations(Isa isa, const float* x, int M, int K, QuantizedActivations& out,
                          int block = QuantizedActivations::kMinBlock);
// The same on the active ISA.
void quantize_activations(const float* x, int M, int K, QuantizedActivations& out,
                          int block = QuantizedActivations::kMinBlock);

// One row with AVX-512 (call only when the CPU has AVX-512F/BW): codes [K], scales [K / block],
// sum16 [K / 16].
void quantize_row_avx512(const float* x, int K, int block, int8_t* codes, float* scales,
                         int32_t* sum16);
// The same with AVX2 (call only when the CPU has it).
void quantize_row_avx2(const float* x, int K, int block, int8_t* codes, float* scales,
                       int32_t* sum16);

}  // namespace pagedllm::cpu
