// The persistent input batch: the worker's row-per-request state, kept across steps so that a
// step only writes what changed.
//
// Rows are filled lowest-free-first; removing a request leaves a hole that condense() fills by
// moving the last live rows down, so live rows are always [0, num_reqs()) after condense().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/multimodal_feature.h"
#include "core/sampling_params.h"
#include "spec_decode/draft_length.h"
#include "structured/matcher.h"
#include "worker/block_table.h"

namespace pagedllm {

// The worker's copy of one request; it survives preemption (the batch row does not).
struct CachedRequestState {
  std::string req_id;
  std::vector<int32_t> token_ids;  // prompt, then outputs
  int num_prompt_tokens = 0;
  SamplingParams sampling_params;
  std::vector<int32_t> block_ids;
  int num_computed_tokens = 0;
  std::optional<int32_t> eos_token_id;
  uint64_t seed = 0;  // sampling seed: the request's own, or drawn when it had none
  // Batch row while in the batch, else -1; kept current by InputBatch.
  int row = -1;
  // Position in this step's SchedulerOutput::num_scheduled_tokens; set by the runner.
  int scheduled_index = -1;
  // Draft tokens verified this step (from the scheduler), and how many to propose next.
  std::vector<int32_t> drafts;
  DraftLength draft_length;
  // Structured outputs: where the output stands in its grammar; made on the first step that
  // samples (only the sampling rank needs it).
  std::shared_ptr<structured::GrammarMatcher> matcher;
  // Where the constrained part of the output begins (after structured_outputs->start_after);
  // -1 while it has not been seen (searched up to constraint_scanned).
  int constraint_start = -1;
  int constraint_scanned = 0;
  // Images: their placeholders and pixels, and for M-RoPE models the prompt's positions
  // ([3, num_prompt_tokens], empty for text) and the offset of the positions after it.
  std::vector<MultiModalFeature> mm_features;
  std::vector<int32_t> mrope_positions;
  int64_t mrope_delta = 0;
};

class InputBatch {
 public:
  InputBatch(int max_num_reqs, int max_model_len, int max_blocks_per_req);

  int max_num_reqs() const { return max_num_reqs_; }
  int max_model_len() const { return max_model_len_; }
  // Live requests. Rows [0, num_reqs()) are live once condense() ran.
  int num_reqs() const { return static_cast<int>(req_id_to_index_.size()); }
  // Returns the row, or -1.
  int index_of(const std::string& req_id) const;
  const std::string& req_id(int row) const { return req_ids_[static_cast<size_t>(row)]; }

  // Puts the request in the lowest free row and returns that row. The batch keeps a pointer
  // to `state` (and updates state.row) until the request is removed.
  int add_request(CachedRequestState& state);
  // Returns false if the request is not in the batch.
  bool remove_request(const std::string& req_id);
  void remove_row(int row);
  CachedRequestState* state(int row) const { return states_[static_cast<size_t>(row)]; }
  void condense();
  void swap_rows(int a, int b);
  // Appends a sampled token to row's token ids.
  void append_token(int row, int32_t token);
  // Writes draft tokens after row's tokens, where prepare_inputs reads them, without counting
  // them as tokens: each one is overwritten when the token sampled at its place is appended.
  void write_drafts(int row, std::span<const int32_t> drafts);

  // Token-ids table, int32 [max_num_reqs, max_model_len], row-major.
  std::span<const int32_t> token_ids() const { return token_ids_; }
  std::span<const int32_t> row_tokens(int row) const;
  int num_tokens(int row) const { return num_tokens_[static_cast<size_t>(row)]; }
  int num_prompt_tokens(int row) const { return num_prompt_tokens_[static_cast<size_t>(row)]; }
  int num_computed_tokens(int row) const { return num_computed_tokens_[static_cast<size_t>(row)]; }
  void set_num_computed_tokens(int row, int n) {
    num_computed_tokens_[static_cast<size_t>(row)] = n;
  }
  BlockTable& block_table() { return block_table_; }
  const BlockTable& block_table() const { return block_table_; }

  // Sampling parameters as arrays over rows, the layout a batched sampler wants.
  struct SamplingArrays {
    std::vector<float> temperature, top_p, min_p;
    std::vector<int32_t> top_k;
    std::vector<float> presence_penalty, frequency_penalty, repetition_penalty;
    std::vector<uint64_t> seed;
    std::vector<uint8_t> has_seed;
    std::vector<int32_t> logprobs;  // -1: none
  };
  const SamplingArrays& sampling() const { return sampling_; }

 private:
  void move_row(int src, int dst);
  void set_sampling_row(int row, const SamplingParams& p);
  int32_t* row_ptr(int r) { return token_ids_.data() + static_cast<size_t>(r) * max_model_len_; }

  int max_num_reqs_;
  int max_model_len_;
  std::vector<std::string> req_ids_;  // empty string marks a free row
  std::vector<CachedRequestState*> states_;
  std::unordered_map<std::string, int> req_id_to_index_;
  std::vector<int> holes_;
  int num_rows_ = 0;  // one past the highest row ever used since the last condense()
  std::vector<int32_t> token_ids_;
  std::vector<int32_t> num_tokens_, num_prompt_tokens_, num_computed_tokens_;
  BlockTable block_table_;
  SamplingArrays sampling_;
};

}  // namespace pagedllm
