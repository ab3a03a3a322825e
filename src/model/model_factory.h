// Builds the Model for a loaded checkpoint by its architecture (as CTranslate2's model
// factory), so the engine never names a model class: a new architecture, or a composite one
// (a vision encoder beside a language model), registers here and the engine is unchanged.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loader/model_weights.h"
#include "model/model.h"
#include "model/tensor_parallel.h"

namespace pagedllm {

struct ModelBuildOptions {
  // The most tokens one step can hold (the scheduler's max_num_batched_tokens).
  int max_num_batched_tokens = 0;
  // progress(done, total) while the weights are prepared (packed for the kernels).
  std::function<void(size_t, size_t)> progress;
};

// Throws ModelLoadError when no model implements weights->config.architecture.
// `tensor_parallel`: one rank of a tensor-parallel job, whose weights are its shard.
std::unique_ptr<Model> create_model(std::shared_ptr<const ModelWeights> weights,
                                    const ModelBuildOptions& options,
                                    TensorParallelShard tensor_parallel = {});

// The KV cache geometry the model of this checkpoint will ask for (Model::kv_cache_spec), known
// before the model is built so that a configuration error fails before the weights are packed.
// Throws ModelLoadError as create_model() does.
KVCacheSpec model_kv_cache_spec(const ModelWeights& weights, int num_blocks, int block_size,
                                DType dtype);

// The architectures create_model() builds.
std::vector<std::string> buildable_architectures();

}  // namespace pagedllm
