#include "sampling/greedy.h"

#include <algorithm>

namespace pagedllm {

void sample_greedy(std::span<const float> logits, int vocab_size, std::span<int32_t> out) {
  const auto vocab = static_cast<size_t>(vocab_size);
  for (size_t i = 0; i < out.size(); ++i) {
    const auto row = logits.subspan(i * vocab, vocab);
    out[i] = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
  }
}

}  // namespace pagedllm
