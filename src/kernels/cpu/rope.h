// Rotary position embedding: the two pair layouts weights come in, the per-step angle table
// and the rotation of query and key heads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagedllm {

// Which elements of a head rotate together. Files differ: the loaders record the layout of the
// weights they read, and the kernels rotate accordingly.
enum class RopeStyle {
  kInterleaved,  // rotate pairs (2i, 2i+1): llama2.c, GGUF `llama`
  kNeox,         // rotate (i, i + d/2): Hugging Face weights, GGUF qwen2/qwen3
};

}  // namespace pagedllm

namespace pagedllm::cpu {

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

}  // namespace pagedllm::cpu
