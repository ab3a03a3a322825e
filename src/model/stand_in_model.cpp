#include "model/stand_in_model.h"

#include <algorithm>
#include <stdexcept>

namespace pagedllm {

StandInModel::StandInModel(int vocab_size) : vocab_size_(vocab_size) {
  if (vocab_size <= 0) throw std::invalid_argument("vocab_size must be positive");
}

void StandInModel::forward(const ModelInputs& inputs, std::span<float> logits) {
  const auto vocab = static_cast<size_t>(vocab_size_);
  for (int i = 0; i < inputs.num_logits; ++i) {
    auto row = logits.subspan(static_cast<size_t>(i) * vocab, vocab);
    std::fill(row.begin(), row.end(), 0.0f);
    const int32_t position = inputs.positions[static_cast<size_t>(inputs.logits_indices[i])];
    row[static_cast<size_t>(next_token(position, vocab_size_))] = 1.0f;
  }
}

KVCacheSpec StandInModel::kv_cache_spec(int num_blocks, int block_size, DType dtype) const {
  // No layers: the rule needs no context, so a pool of this spec holds no bytes.
  return KVCacheSpec{0, num_blocks, block_size, 0, 0, dtype};
}

}  // namespace pagedllm
