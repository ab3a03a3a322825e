// What crosses the core/worker boundary each step, in both directions.
//
// The worker keeps its own copy of every request's tokens and blocks, so a step only carries
// what changed: full data for new requests, deltas for the others.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/request.h"
#include "core/sampling_params.h"
#include "pagedllm/sampling.h"

namespace pagedllm {

struct NewRequestData {
  std::string req_id;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams sampling_params;
  std::vector<int32_t> block_ids;
  int num_computed_tokens = 0;  // prefix-hit tokens, before this step
  std::optional<int32_t> eos_token_id;
  std::vector<MultiModalFeature> mm_features;
};

struct CachedRequestData {
  std::string req_id;
  // All block ids when resumed_from_preemption, else only the blocks added this step.
  std::vector<int32_t> new_block_ids;
  int num_computed_tokens = 0;  // before this step
  bool resumed_from_preemption = false;
  // Draft tokens to verify this step; they follow the request's tokens and are counted in its
  // num_scheduled_tokens (1 + spec_token_ids.size() for a decode).
  std::vector<int32_t> spec_token_ids;
};

struct ScheduledTokens {
  std::string req_id;
  int num_tokens = 0;
};

// Images whose encoder runs this step: indices into the request's mm_features.
struct ScheduledEncoderInputs {
  std::string req_id;
  std::vector<int> inputs;
};

struct SchedulerOutput {
  std::vector<NewRequestData> scheduled_new_reqs;
  std::vector<CachedRequestData> scheduled_cached_reqs;
  // In scheduling order: running requests first, then the newly admitted ones.
  std::vector<ScheduledTokens> num_scheduled_tokens;
  int total_num_scheduled_tokens = 0;
  // Requests that ended since the previous step; the worker drops their state.
  std::vector<std::string> finished_req_ids;
  std::vector<std::string> preempted_req_ids;
  // Encoder work of this step, and encoder outputs the worker drops (evicted from the encoder
  // cache) before running it.
  std::vector<ScheduledEncoderInputs> scheduled_encoder_inputs;
  std::vector<std::string> free_encoder_identifiers;

  // Keeps capacity so that a reused output does not reallocate every step.
  void clear();
};

// What one step produced, per scheduled request in scheduling order (req_ids[k] is
// SchedulerOutput::num_scheduled_tokens[k]): the tokens it sampled, none for a partial prefill,
// one for an ordinary step, several where a step verified draft tokens. The scheduler applies
// them in order and stops at the first that ends the request, dropping the rest.
struct ModelRunnerOutput {
  std::vector<std::string> req_ids;
  std::vector<std::vector<int32_t>> sampled_token_ids;
  // Aligned with sampled_token_ids; log-probabilities only where the request asked for them.
  std::vector<std::vector<SampledToken>> sampled;
  // Draft tokens proposed for each request's next step (empty: none, or no speculation).
  std::vector<std::vector<int32_t>> spec_token_ids;

  // Empties every list but keeps the inner lists' capacity for the next step.
  void clear();
  // n requests, each with no tokens yet.
  void resize(size_t n);
};

struct EngineCoreOutput {
  std::string req_id;
  std::vector<int32_t> new_token_ids;
  std::optional<FinishReason> finish_reason;
  std::optional<int32_t> stop_reason;
  // One entry per new token when the request asked for logprobs.
  std::vector<SampledToken> logprobs;
};

}  // namespace pagedllm
