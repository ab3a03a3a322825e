// Resolves a Hugging Face repo id ("org/name") to a snapshot in the local cache
// ($HF_HOME/hub, or ~/.cache/huggingface/hub), as vLLM does offline. Nothing is downloaded.
#pragma once

#include <string>

namespace pagedllm {

// Returns `model` unchanged when it names an existing path. Otherwise, for a repo id, returns
// the cached snapshot directory (or its single .gguf file); throws ModelLoadError when the repo
// is not in the cache.
std::string resolve_model_path(const std::string& model);

}  // namespace pagedllm
