#include "spec_decode/replay_proposer.h"

#include <algorithm>

namespace pagedllm {

ReplayProposer::ReplayProposer(std::vector<std::vector<int32_t>> sequences)
    : sequences_(std::move(sequences)) {}

void ReplayProposer::propose(std::span<const int32_t> tokens, int max_drafts,
                             std::vector<int32_t>& drafts) const {
  for (const auto& seq : sequences_) {
    if (seq.size() <= tokens.size() || !std::equal(tokens.begin(), tokens.end(), seq.begin()))
      continue;
    const size_t count = std::min(seq.size() - tokens.size(), static_cast<size_t>(max_drafts));
    drafts.insert(drafts.end(), seq.begin() + static_cast<std::ptrdiff_t>(tokens.size()),
                  seq.begin() + static_cast<std::ptrdiff_t>(tokens.size() + count));
    return;
  }
}

}  // namespace pagedllm
