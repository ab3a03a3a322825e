// What a model needs to run as one rank of a tensor-parallel job (docs/SCALE-OUT.md): its
// weights are the rank's shard (loader/weight_shard.h), and after each row-parallel product
// (o_proj, down_proj) it sums the ranks' partial results. The transport lives above the model.
#pragma once

#include <cstddef>
#include <functional>

namespace pagedllm {

struct TensorParallelShard {
  // Sums `count` floats over the ranks, in place; null on one process.
  std::function<void(float* data, size_t count)> all_reduce;
  // False on the ranks that do not sample: they hold no output layer and forward() leaves the
  // logits alone.
  bool computes_logits = true;
};

}  // namespace pagedllm
