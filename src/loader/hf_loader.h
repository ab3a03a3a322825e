// Loads a Hugging Face model directory: config.json plus model.safetensors, or shards listed in
// model.safetensors.index.json. Architectures: LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM; F32, F16 and BF16 weights. HF Q/K weights use the
// rotate-half (NeoX) RoPE form, which the model applies as is (no permutation).
#pragma once

#include <string>

#include "loader/model_weights.h"

namespace pagedllm {

ModelWeights load_hf_directory(const std::string& dir);
bool is_hf_directory(const std::string& path);

}  // namespace pagedllm
