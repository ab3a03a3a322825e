#include "model/model_factory.h"

#include <string_view>

#include "format/mapped_file.h"
#include "model/llama_model.h"

namespace pagedllm {

namespace {

using Builder = std::unique_ptr<Model> (*)(std::shared_ptr<const ModelWeights>,
                                           const ModelBuildOptions&, TensorParallelShard);

std::unique_ptr<Model> build_llama(std::shared_ptr<const ModelWeights> weights,
                                   const ModelBuildOptions& options,
                                   TensorParallelShard tensor_parallel) {
  return std::make_unique<LlamaModel>(std::move(weights), options.max_num_batched_tokens,
                                      options.progress, std::move(tensor_parallel));
}

using KVSpecOf = KVCacheSpec (*)(const ModelConfig&, int num_blocks, int block_size, DType);

struct Registration {
  std::string_view architecture;
  Builder build;
  KVSpecOf kv_spec;
};

// Llama, Mistral, Qwen2/2.5/3 and the Qwen2-VL language model share one forward pass; their
// differences (QKV biases, Q/K norms, RoPE layout, M-RoPE) are in the weights and config.
constexpr Registration kModels[] = {
    {"llama", build_llama, LlamaModel::kv_cache_spec},
    {"qwen2", build_llama, LlamaModel::kv_cache_spec},
    {"qwen3", build_llama, LlamaModel::kv_cache_spec},
    {"qwen2vl", build_llama, LlamaModel::kv_cache_spec},  // M-RoPE from mrope_section
};

}  // namespace

const Registration& registration_of(const ModelWeights& weights) {
  const std::string& arch = weights.config.architecture;
  for (const Registration& r : kModels) {
    if (r.architecture == arch) return r;
  }
  std::string known;
  for (const std::string& a : buildable_architectures()) known += (known.empty() ? "" : ", ") + a;
  throw ModelLoadError(weights.source + ": no model implements architecture '" + arch + "' (" +
                       known + ")");
}

std::unique_ptr<Model> create_model(std::shared_ptr<const ModelWeights> weights,
                                    const ModelBuildOptions& options,
                                    TensorParallelShard tensor_parallel) {
  const Registration& r = registration_of(*weights);
  return r.build(std::move(weights), options, std::move(tensor_parallel));
}

KVCacheSpec model_kv_cache_spec(const ModelWeights& weights, int num_blocks, int block_size,
                                DType dtype) {
  return registration_of(weights).kv_spec(weights.config, num_blocks, block_size, dtype);
}

std::vector<std::string> buildable_architectures() {
  std::vector<std::string> out;
  for (const Registration& r : kModels) out.emplace_back(r.architecture);
  return out;
}

}  // namespace pagedllm
