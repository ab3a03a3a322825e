// A request as the core sees it: token ids and progress, never tensors.
//
// There is no prefill or decode phase: num_computed_tokens chases num_tokens(). A request is
// "decoding" simply when only its last sampled token is left to compute.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/block_hash.h"
#include "core/multimodal_feature.h"
#include "core/sampling_params.h"

namespace pagedllm {

enum class RequestStatus {
  kWaiting,
  kRunning,
  kPreempted,
  kFinishedStopped,
  kFinishedLengthCapped,
  kFinishedAborted,
};

enum class FinishReason { kStop, kLength, kAbort };

const char* to_string(RequestStatus status);
const char* to_string(FinishReason reason);
bool is_finished(RequestStatus status);
// Call only with a finished status.
FinishReason finish_reason_of(RequestStatus status);

class Request {
 public:
  Request(std::string id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
          std::optional<int32_t> eos_token_id = std::nullopt, double arrival_time = 0.0,
          int priority = 0);

  const std::string& id() const { return id_; }
  const SamplingParams& params() const { return params_; }
  std::optional<int32_t> eos_token_id() const { return eos_token_id_; }
  double arrival_time() const { return arrival_time_; }
  int priority() const { return priority_; }

  int num_prompt_tokens() const { return num_prompt_tokens_; }
  int num_tokens() const { return static_cast<int>(all_token_ids_.size()); }
  int num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  std::span<const int32_t> all_token_ids() const { return all_token_ids_; }
  std::span<const int32_t> prompt_token_ids() const {
    return std::span(all_token_ids_).first(num_prompt_tokens_);
  }
  std::span<const int32_t> output_token_ids() const {
    return std::span(all_token_ids_).subspan(num_prompt_tokens_);
  }
  void append_output_token(int32_t token) { all_token_ids_.push_back(token); }

  RequestStatus status = RequestStatus::kWaiting;
  int num_computed_tokens = 0;
  // Prefix-cache hit on first scheduling; -1 until then.
  int num_cached_tokens = -1;
  // Set when the request stopped on one of stop_token_ids.
  std::optional<int32_t> stop_reason;
  int num_preemptions = 0;
  // Draft tokens proposed after the last step, verified when the request is next scheduled.
  std::vector<int32_t> spec_token_ids;
  // Chained hashes of the full blocks of all_token_ids(), extended lazily by the KV manager.
  std::vector<BlockHash> block_hashes;
  // Mixed into the first block's hash so that tenants can keep their prefixes apart.
  std::string cache_salt;
  // Images, by placeholder offset (ascending, not overlapping); empty for text.
  std::vector<MultiModalFeature> mm_features;

 private:
  std::string id_;
  std::vector<int32_t> all_token_ids_;
  int num_prompt_tokens_;
  SamplingParams params_;
  std::optional<int32_t> eos_token_id_;
  double arrival_time_;
  int priority_;
};

}  // namespace pagedllm
