// The architectures pagedllm loads, and one table per architecture from a weight's role to its
// tensor name in each file format (as llama.cpp's llama-arch.cpp). The GGUF and Hugging Face
// loaders and the exporter all take names from here, so a tensor is named once.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kernels/cpu/rope.h"

namespace pagedllm {

enum class WeightRole {
  kEmbedding,
  kAttnNorm,
  kWq,
  kWk,
  kWv,
  kWo,
  kBq,
  kBk,
  kBv,
  kQNorm,
  kKNorm,
  kFfnNorm,
  kGate,
  kUp,
  kDown,
  kFinalNorm,
  kOutput,
  kRopeFreqs,
};

enum class TensorFileFormat { kGguf, kHuggingFace };

// One row of an architecture's table. In a per-layer name, "{}" stands for the layer index.
// An empty name: the format has no such tensor (llama.cpp's rope_freqs has no HF twin).
struct TensorNameEntry {
  WeightRole role;
  bool per_layer;
  std::string_view gguf;
  std::string_view hf;
};

struct ModelArch {
  std::string_view name;  // general.architecture in GGUF, ModelConfig::architecture
  std::span<const std::string_view> hf_classes;  // config.json "architectures" that map here
  std::span<const TensorNameEntry> tensors;
  // The Q/K row layout of this architecture's GGUF files: llama.cpp permutes `llama` weights
  // to interleaved pairs and leaves the others in Hugging Face's rotate-half order.
  RopeStyle gguf_rope_style;
  // Where newer transformers (>= 4.52) save a vision-language model's text weights: HF names
  // starting "model." may start with this instead (model.language_model.layers.0...). Empty:
  // no such alias.
  std::string_view hf_language_model_prefix;
};

// The architecture called `name`, or null.
const ModelArch* find_arch(std::string_view name);
// The architecture of a Hugging Face config.json class name (e.g. Qwen2ForCausalLM), or null.
const ModelArch* find_arch_by_hf_class(std::string_view hf_class);
// Every known architecture's name, for messages: "llama, qwen2, qwen3, qwen2vl".
std::string supported_arch_names();

// The tensor name of `role` (of `layer` for per-layer roles) in `format`. Throws
// std::invalid_argument for a role the architecture's table does not have.
std::string tensor_name(const ModelArch& arch, WeightRole role, TensorFileFormat format,
                        int layer = 0);

// The table's HF name for a tensor a file names `file_name` (the newer transformers' alias
// undone), or file_name itself.
std::string canonical_hf_name(const ModelArch& arch, const std::string& file_name);

}  // namespace pagedllm
