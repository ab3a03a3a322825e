// A proposer for benchmarks only: it knows the sequences an earlier run produced and proposes
// their continuation, so every draft of a deterministic (greedy) rerun is accepted at no
// drafting cost. It measures the most speculation can gain on this machine.
#pragma once

#include <vector>

#include "spec_decode/proposer.h"

namespace pagedllm {

class ReplayProposer : public Proposer {
 public:
  // Each sequence: a prompt followed by the tokens an earlier run generated for it.
  explicit ReplayProposer(std::vector<std::vector<int32_t>> sequences);
  // The continuation of the first recorded sequence that starts with `tokens`.
  void propose(std::span<const int32_t> tokens, int max_drafts,
               std::vector<int32_t>& drafts) const override;

 private:
  std::vector<std::vector<int32_t>> sequences_;
};

}  // namespace pagedllm
