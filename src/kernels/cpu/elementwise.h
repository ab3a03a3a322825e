// Normalization and activation kernels over [tokens, width] rows.
#pragma once

#include <cstdint>

namespace pagedllm::cpu {

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight; out may alias x.
void rms_norm(const float* x, const float* weight, float* out, int rows, int width, float eps);

// out[t][i] = silu(gate_up[t][i]) * gate_up[t][hidden + i]: the two halves of each row of a
// fused gate/up product ([tokens, 2 * hidden]) into out ([tokens, hidden]). Large inputs are
// split over the OpenMP threads by row; the result does not depend on the split.
void swiglu(const float* gate_up, int tokens, int hidden, float* out);
// One row of it; call only when the CPU has AVX-512 (active_isa() >= Isa::kAvx512).
void swiglu_row_avx512(const float* gate, const float* up, float* out, int n);
// The same on AVX2 (active_isa() >= Isa::kAvx2).
void swiglu_row_avx2(const float* gate, const float* up, float* out, int n);

// x[i] += y[i]; large inputs are split over the OpenMP threads.
void add_inplace(float* x, const float* y, int64_t n);

}  // namespace pagedllm::cpu
