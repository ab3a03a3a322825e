// The rotary frequencies of a model: what its configuration asks for, computed once at load.
#pragma once

#include <vector>

#include "loader/model_config.h"

namespace pagedllm {

// Inverse frequencies theta^(-2i/head_dim), i < head_dim/2, with Llama 3 scaling when given.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config);

}  // namespace pagedllm
