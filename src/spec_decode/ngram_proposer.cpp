#include "spec_decode/ngram_proposer.h"

#include <algorithm>
#include <stdexcept>

namespace pagedllm {

NgramProposer::NgramProposer(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {
  if (min_n < 1 || max_n < min_n)
    throw std::invalid_argument("n-gram sizes must be 1 <= min <= max");
}

namespace {

// The start of the latest occurrence of tokens' last n tokens that ends before the suffix
// itself does, or -1. Scanned from the back: recent context predicts best.
std::ptrdiff_t latest_earlier_occurrence(std::span<const int32_t> tokens, size_t n) {
  const size_t len = tokens.size();
  const auto suffix = tokens.last(n);
  for (size_t start = len - n; start-- > 0;) {
    if (tokens[start + n - 1] != suffix[n - 1]) continue;  // cheap reject on the last token
    if (std::equal(suffix.begin(), suffix.end(),
                   tokens.begin() + static_cast<std::ptrdiff_t>(start)))
      return static_cast<std::ptrdiff_t>(start);
  }
  return -1;
}

}  // namespace

void NgramProposer::propose(std::span<const int32_t> tokens, int max_drafts,
                            std::vector<int32_t>& drafts) const {
  if (max_drafts <= 0) return;
  for (int n = std::min<int>(max_n_, static_cast<int>(tokens.size()) - 1); n >= min_n_; --n) {
    const std::ptrdiff_t start = latest_earlier_occurrence(tokens, static_cast<size_t>(n));
    if (start < 0) continue;
    const size_t from = static_cast<size_t>(start) + static_cast<size_t>(n);
    const size_t count = std::min(tokens.size() - from, static_cast<size_t>(max_drafts));
    drafts.insert(drafts.end(), tokens.begin() + static_cast<std::ptrdiff_t>(from),
                  tokens.begin() + static_cast<std::ptrdiff_t>(from + count));
    return;
  }
}

}  // namespace pagedllm
