// Structured outputs on the worker side: each constrained row's allowed-token masks for this
// step, computed on a thread of their own while the forward pass runs (they depend only on the
// tokens so far and the drafts, not on the logits), then applied by the sampler.
//
// A row verifying drafts gets one mask per logits row: the mask of position j is the grammar's
// state after drafts[0..j), which is what the sampled tokens will be if position j is reached
// at all (verification stops at the first mismatch). A draft the grammar refuses can never be
// drawn, so its row is the last one that needs a mask.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "model/forward_inputs.h"
#include "structured/grammar_cache.h"
#include "worker/input_batch.h"

namespace pagedllm {

class GrammarMasks {
 public:
  // grammars: null for a runner that never samples under a grammar (then a constrained request
  // is an error, which the engine refuses before it gets here).
  explicit GrammarMasks(std::shared_ptr<structured::TokenGrammarCache> grammars)
      : grammars_(std::move(grammars)) {}
  ~GrammarMasks();

  // Starts this step's masks; returns at once. Nothing to do when no row is constrained.
  void start(const InputBatch& batch, const ModelInputs& in);
  // Waits for them; rethrows what failed.
  void finish();
  // The mask of logits row i (bit t of word t/32: token t allowed), or null: no constraint.
  const uint32_t* mask(int logits_row) const;
  // Moves the request's matcher past a token it sampled.
  static void accept(CachedRequestState& s, int32_t token);
  // True when the token just sampled completed start_after: the constraint begins with the
  // next token, whose mask this step did not compute, so verification must stop here.
  static bool constraint_begins_now(const CachedRequestState& s);

 private:
  void compute(const InputBatch& batch, const ModelInputs& in);
  void compute_row(CachedRequestState& s, int first, int end);
  void catch_up(CachedRequestState& s);
  static int constraint_start(CachedRequestState& s);

  std::shared_ptr<structured::TokenGrammarCache> grammars_;
  size_t words_ = 0;
  std::vector<uint32_t> masks_;    // [num_logits][words_]
  std::vector<uint8_t> has_mask_;  // per logits row
  std::future<void> pending_;
};

}  // namespace pagedllm
