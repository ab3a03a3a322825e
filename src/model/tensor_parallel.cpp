#include "model/tensor_parallel.h"

#include <algorithm>
#include <stdexcept>

#include "loader/weight_shard.h"

namespace pagedllm {

void place_vocab_shares(const float* gathered, int rows, int vocab, int ranks,
                        std::span<float> whole) {
  if (whole.size() < static_cast<size_t>(rows) * static_cast<size_t>(vocab))
    throw std::length_error("logits buffer is smaller than rows x vocab");
  for (int r = 0; r < ranks; ++r) {
    const VocabShare share = vocab_share(vocab, r, ranks);
    for (int row = 0; row < rows; ++row) {
      const float* from = gathered + static_cast<size_t>(row) * static_cast<size_t>(share.count);
      std::copy(from, from + share.count,
                whole.begin() + static_cast<ptrdiff_t>(row) * vocab + share.begin);
    }
    gathered += static_cast<size_t>(rows) * static_cast<size_t>(share.count);
  }
}

}  // namespace pagedllm
