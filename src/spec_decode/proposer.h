// Draft-token proposers for speculative decoding, as vLLM's spec_decode/: after a step samples
// a request's next token, a proposer guesses the tokens that follow; the next step feeds them
// to the target model together with that token and keeps the longest prefix the target agrees
// with (worker/model_runner.cpp). A proposer only guesses: a bad guess costs time, never
// correctness.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/config.h"

namespace pagedllm {

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Appends at most max_drafts tokens that may continue `tokens` (prompt, then outputs) to
  // `drafts`; appends nothing when it has no guess. Called from several threads at once.
  virtual void propose(std::span<const int32_t> tokens, int max_drafts,
                       std::vector<int32_t>& drafts) const = 0;
};

// The proposer of config.method; null when speculation is off. Throws ConfigError for a
// method this build cannot propose with.
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config);

}  // namespace pagedllm
