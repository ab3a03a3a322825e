// The interface every model implements: logits for the tokens that need them, nothing about
// scheduling. The model reads the forward inputs and the paged KV cache; it never decides who
// runs. It says what KV cache it needs, and the engine sizes and allocates the pool from that.
#pragma once

#include <cstddef>
#include <span>

#include "format/tensor.h"
#include "kernels/kv_cache.h"
#include "model/forward_inputs.h"

namespace pagedllm {

class Model {
 public:
  virtual ~Model() = default;
  virtual int vocab_size() const = 0;

  // The KV cache geometry this model needs for a pool of num_blocks blocks of block_size
  // tokens with elements of `dtype` (layers, KV heads and head size are the model's).
  virtual KVCacheSpec kv_cache_spec(int num_blocks, int block_size, DType dtype) const = 0;
  // Hands the model the pool it writes K and V to (allocated from kv_cache_spec); it must
  // outlive the model's forward passes. Throws std::invalid_argument for a mismatched geometry.
  virtual void bind_kv_cache(PagedKVCache& cache) = 0;

  // Writes the logits of the token at inputs.logits_indices[i] to row i of `logits`
  // ([inputs.num_logits, vocab_size], row-major). Call only after prepare_inputs() for the same
  // step, with a KV cache bound.
  virtual void forward(const ModelInputs& inputs, std::span<float> logits) = 0;

  // Bytes of weights one forward pass reads whatever its batch (the floor on a decode step's
  // memory traffic); 0 when unknown.
  virtual size_t linear_weight_bytes() const { return 0; }
};

}  // namespace pagedllm
