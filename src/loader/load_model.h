// Loads a model from any supported file: llama2.c checkpoints, GGUF files, Hugging Face
// directories. Throws ModelLoadError with a one-line reason naming the file.
#pragma once

#include <string>

#include "loader/model_weights.h"

namespace pagedllm {

ModelWeights load_model(const std::string& path);

}  // namespace pagedllm
