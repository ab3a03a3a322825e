// Draft-token proposers for speculative decoding, as vLLM's spec_decode/: after a step samples
// a request's next token, a proposer guesses the tokens that follow; the next step feeds them
// to the target model together with that token and keeps the longest prefix the target agrees
// with (worker/model_runner.cpp). A proposer only guesses: a bad guess costs time, never
// correctness.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/config.h"

namespace pagedllm {

// One request's turn in a batched proposal.
struct ProposalRequest {
  const std::string* req_id;
  std::span<const int32_t> tokens;  // prompt, then outputs
  int max_drafts;
  std::vector<int32_t>* drafts;  // appended to
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Appends at most max_drafts tokens that may continue `tokens` (prompt, then outputs) to
  // `drafts`; appends nothing when it has no guess. Called from several threads at once.
  virtual void propose(std::span<const int32_t> tokens, int max_drafts,
                       std::vector<int32_t>& drafts) const = 0;
  // Proposers that run a model propose for the whole step at once, from one thread.
  virtual bool batched() const { return false; }
  virtual void propose_batch(std::span<ProposalRequest> requests) {
    for (ProposalRequest& r : requests) propose(r.tokens, r.max_drafts, *r.drafts);
  }
  // The request finished: drop what is kept for it.
  virtual void forget(const std::string& req_id) { (void)req_id; }
};

// The proposer of config.method; null when speculation is off. Throws ConfigError for a
// method this build cannot propose with, or a draft model that does not fit the target.
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, int target_vocab,
                                        int max_model_len, int max_num_seqs);

}  // namespace pagedllm
