// Normalization, rotary embedding and activation kernels over [tokens, width] rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "loader/model_config.h"
#include "loader/model_weights.h"

namespace pagedllm::cpu {

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight; out may alias x.
void rms_norm(const float* x, const float* weight, float* out, int rows, int width, float eps);

// Inverse frequencies theta^(-2i/head_dim), i < head_dim/2, with Llama 3 scaling when given.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config);

// cos and sin of position * inv_freq[i] per token ([tokens][half] each), computed once per
// step and shared by every layer's queries and keys.
struct RopeAngles {
  int half = 0;
  std::vector<float> cos, sin;
};
void rope_angles(std::span<const int32_t> positions, std::span<const float> inv_freq,
                 RopeAngles& out);

// Rotates every head of x ([tokens, n_heads * head_dim]) by its token's angles
// (head_dim = 2 * angles.half).
void apply_rope(float* x, int tokens, int n_heads, const RopeAngles& angles, RopeStyle style);
// The heads of one token (x: [n_heads, 2 * half]; cos, sin: the token's `half` angles), as
// apply_rope rotates them.
void rope_heads(float* x, int n_heads, const float* cos, const float* sin, int half,
                RopeStyle style);
// One head of it; call only when the CPU has AVX-512.
void rope_head_avx512(float* head, const float* cos, const float* sin, int half, RopeStyle style);

// out[t][i] = silu(gate_up[t][i]) * gate_up[t][hidden + i]: the two halves of each row of a
// fused gate/up product ([tokens, 2 * hidden]) into out ([tokens, hidden]). Large inputs are
// split over the OpenMP threads by row; the result does not depend on the split.
void swiglu(const float* gate_up, int tokens, int hidden, float* out);
// One row of it; call only when the CPU has AVX-512 (active_isa() >= Isa::kAvx512).
void swiglu_row_avx512(const float* gate, const float* up, float* out, int n);

// x[i] += y[i]; large inputs are split over the OpenMP threads.
void add_inplace(float* x, const float* y, int64_t n);

}  // namespace pagedllm::cpu
