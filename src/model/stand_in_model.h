// A weightless model with a fixed rule, for tracing and for property tests of the engine:
// the token after position p is (31 * p + 7) % vocab_size. Whatever the batching, chunking or
// preemption, a correct engine therefore produces the same tokens for a request.
#pragma once

#include <cstdint>

#include "model/model.h"

namespace pagedllm {

class StandInModel : public Model {
 public:
  explicit StandInModel(int vocab_size);
  int vocab_size() const override { return vocab_size_; }
  KVCacheSpec kv_cache_spec(int num_blocks, int block_size, DType dtype) const override;
  void bind_kv_cache(PagedKVCache&) override {}
  void forward(const ModelInputs& inputs, std::span<float> logits) override;

  // The rule itself, so that tests can state what a request must produce.
  static int32_t next_token(int64_t position, int vocab_size) {
    return static_cast<int32_t>((31 * position + 7) % vocab_size);
  }

 private:
  int vocab_size_;
};

}  // namespace pagedllm
