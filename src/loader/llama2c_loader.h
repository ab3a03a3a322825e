// llama2.c checkpoints: a header of 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len; a negative vocab_size means an unshared classifier), then f32 arrays.
#pragma once

#include <string>

#include "loader/model_weights.h"

namespace pagedllm {

// Throws ModelLoadError for a truncated or inconsistent file.
ModelWeights load_llama2c(const std::string& path);
// True if the file starts like a llama2.c checkpoint (a plausible header and exact size).
bool looks_like_llama2c(const std::string& path);

}  // namespace pagedllm
