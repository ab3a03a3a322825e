// Greedy sampling: the arg-max of each logits row (ties go to the lowest token id, as
// torch.argmax does).
#pragma once

#include <cstdint>
#include <span>

namespace pagedllm {

// logits is [num_rows, vocab_size] row-major; writes one token id per row to out.
void sample_greedy(std::span<const float> logits, int vocab_size, std::span<int32_t> out);

}  // namespace pagedllm
