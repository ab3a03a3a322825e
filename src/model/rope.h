// The rotary frequencies of a model: what its configuration asks for, computed once at load; and
// the per-step angles of M-RoPE (Qwen2-VL), whose tokens carry three positions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/rope.h"
#include "loader/model_config.h"

namespace pagedllm {

// Inverse frequencies theta^(-2i/head_dim), i < head_dim/2, with Llama 3 scaling when given.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config);

// M-RoPE's angles, as HF's apply_multimodal_rotary_pos_emb: frequency i of token t turns with
// the temporal position (row 0) for i < sections[0], the height (row 1) for the next
// sections[1], the width (row 2) for the rest. Row r of token t is positions[r * stride + t].
// With three equal rows this is cpu::rope_angles, value for value.
void mrope_angles(std::span<const int32_t> positions, int64_t stride, int64_t tokens,
                  std::span<const float> inv_freq, std::span<const int> sections,
                  cpu::RopeAngles& out);

}  // namespace pagedllm
