// Loads Llama-family weights from a GGUF file: architectures llama (Llama 1/2/3, Mistral), qwen2
// and qwen3, with F32, F16, BF16, Q8_0 and Q4_0 tensors, used in place from the memory map.
#pragma once

#include <string>

#include "format/gguf_file.h"
#include "loader/model_weights.h"

namespace pagedllm {

ModelWeights load_gguf(const std::string& path);
ModelWeights load_gguf(const GGUFFile& gguf);

}  // namespace pagedllm
