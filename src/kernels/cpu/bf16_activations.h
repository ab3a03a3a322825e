// Activations rounded to bf16 for the dot products against bf16 weights, as llama.cpp rounds
// them for its bf16 matrix products and as AVX512-BF16's vdpbf16ps consumes them. Each row is
// K bf16 values in pairs: pair i is one 32-bit lane holding k = 2i in its low half and 2i + 1 in
// its high half (a zero pads an odd K). Rounding is to nearest even; denormal inputs become zero,
// as vdpbf16ps treats them. Each row is rounded alone, so a row's result does not depend on its
// batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "util/aligned_allocator.h"

namespace pagedllm::cpu {

struct Bf16Activations {
  int M = 0, pairs = 0;  // pairs = ceil(K / 2) per row
  // Rows start on cache lines when K % 32 == 0 (what oneDNN's AMX kernels need at full speed).
  std::vector<uint32_t, AlignedAllocator<uint32_t>> data;
  // The same values widened to f32, k in order ([M][2 * pairs]), for a tile without bf16 dot
  // products (AVX2): it broadcasts them from memory rather than widening each pair once per panel.
  std::vector<float, AlignedAllocator<float>> widened;

  const uint32_t* row(int m) const { return data.data() + static_cast<size_t>(m) * pairs; }
  const float* widened_row(int m) const {
    return widened.data() + static_cast<size_t>(m) * 2 * pairs;
  }
};

// Rounds x[M][K] into out, reusing its buffer; `isa` picks the code path (every path gives the
// same bits), large inputs are split over the OpenMP threads by row.
void round_activations_to_bf16(Isa isa, const float* x, int M, int K, Bf16Activations& out);

// Fills out.widened from out.data (exact: a bf16 is an f32 with 16 zero low bits).
void widen_bf16_activations(Bf16Activations& out);

// One row of it with AVX512-BF16's vcvtne2ps2bf16 (the same rounding, flush and NaN quieting);
// call only when the CPU has AVX512-BF16. row holds ceil(K / 2) pairs.
void round_row_to_bf16_dot(const float* x, int K, uint32_t* row);

// f32 -> bf16 bits: round to nearest even, denormals (in or out) to a signed zero, NaN kept
// quiet. Packing bf16 weights applies the same flush to their denormals.
uint16_t bf16_flushed(float f);
uint16_t bf16_flushed_bits(uint16_t bf16);

}  // namespace pagedllm::cpu
