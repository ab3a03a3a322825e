// The scheduler, with vLLM v1 semantics: one token budget per step shared by every request,
// no separate prefill and decode phases, chunked prefill and preemption by recompute.
//
// One engine step is:
//   schedule(out)                       -- decide who runs and allocate their KV blocks
//   <worker runs the model on `out`>
//   update_from_output(out, runner_out) -- append sampled tokens, check stops, free blocks
// Call add_request() and finish_requests() only between steps, never between schedule() and
// update_from_output().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/encoder_cache_manager.h"
#include "core/kv_cache_manager.h"
#include "core/request.h"
#include "core/request_queue.h"
#include "core/scheduler_output.h"

namespace pagedllm {

// Thrown by add_request for a request that could never complete.
class RequestRejected : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Throws RequestRejected (prefixed with `who`) when the request's image placeholders are not
// ordered ranges inside its prompt or an image exceeds the encoder budget or cache.
void validate_mm_features(const Request& request, const std::string& who,
                          const SchedulerConfig& config);

// Speculative decoding counters, as vLLM's spec_decode metrics name them.
struct SpecDecodingStats {
  int64_t num_drafts = 0;                      // verify steps of a request with at least one draft
  int64_t num_draft_tokens = 0;                // draft tokens verified
  int64_t num_accepted_tokens = 0;             // of those, accepted
  std::vector<int64_t> accepted_per_position;  // [i]: drafts accepted at position i
};

class Scheduler {
 public:
  // Throws ConfigError for a configuration that cannot work.
  explicit Scheduler(const EngineConfig& config);

  void add_request(std::unique_ptr<Request> request);
  // Ends unfinished requests with a finished status (abort), freeing their blocks at once.
  // Returns the ids that were actually ended; unknown ids are ignored.
  std::vector<std::string> finish_requests(std::span<const std::string> ids, RequestStatus status);

  void schedule(SchedulerOutput& out);
  // runner_out.sampled_token_ids[i] (any number of tokens) belongs to
  // out.num_scheduled_tokens[i]; they are appended in order up to the first that stops.
  void update_from_output(const SchedulerOutput& out, const ModelRunnerOutput& runner_out,
                          std::vector<EngineCoreOutput>& outputs);

  bool has_unfinished_requests() const { return !requests_.empty(); }
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  const Request* find_request(const std::string& id) const;
  std::span<Request* const> running() const { return running_; }
  int64_t num_preemptions_total() const { return num_preemptions_total_; }
  const SpecDecodingStats& spec_decoding_stats() const { return spec_stats_; }
  const EncoderCacheManager& encoder_cache() const { return encoder_cache_; }
  // Images scheduled through the encoder so far, and their embeddings.
  int64_t num_encoded_images() const { return num_encoded_images_; }
  int64_t num_encoded_image_tokens() const { return num_encoded_image_tokens_; }

  const EngineConfig& config() const { return config_; }
  KVCacheManager& kv_cache_manager() { return kv_; }
  const KVCacheManager& kv_cache_manager() const { return kv_; }

 private:
  void validate_new_request(const Request& request) const;
  void schedule_running(SchedulerOutput& out, int& budget);
  void schedule_waiting(SchedulerOutput& out, int& budget);
  // Chooses and preempts one running request; returns it.
  Request* preempt_one(SchedulerOutput& out, size_t& next_index, int& budget);
  void unschedule(Request* request, SchedulerOutput& out, int& budget);
  int clamp_chunk(const Request& request, int num_new_tokens, int budget) const;
  bool partial_prefill_limit_reached(const Request& request, int num_computed,
                                     int num_new_tokens) const;
  // The images whose encoder must run for tokens [num_computed, num_computed + num_new_tokens)
  // go to encoder_plan_; returns num_new_tokens, cut before the first image that does not fit
  // this step's encoder budget or the encoder cache (0: nothing can run now).
  int plan_encoder_inputs(Request& request, int num_computed, int num_new_tokens);
  void commit_encoder_inputs(const Request& request, SchedulerOutput& out);
  void free_computed_encoder_inputs(const Request& request);
  bool check_stop(Request& request) const;
  void trim_drafts(Request& request) const;
  void settle_drafts(Request& request, const std::vector<int32_t>& drafts, size_t num_sampled);
  void finish(Request* request, RequestStatus status);

  EngineConfig config_;
  KVCacheManager kv_;
  std::unordered_map<std::string, std::unique_ptr<Request>> requests_;
  std::vector<Request*> running_;
  RequestQueue waiting_;
  std::vector<std::string> finished_since_last_step_;
  // The requests of the last schedule(), aligned with out.num_scheduled_tokens.
  std::vector<Request*> step_requests_;
  // The drafts each of step_requests_ verifies (null: none), pointing into the step's output.
  std::vector<const std::vector<int32_t>*> step_drafts_;
  SpecDecodingStats spec_stats_;
  int step_partial_prefills_ = 0;
  std::vector<int32_t> scratch_block_ids_;
  int64_t num_preemptions_total_ = 0;
  EncoderCacheManager encoder_cache_;
  int64_t encoder_budget_ = 0;     // this step's, in embeddings
  std::vector<int> encoder_plan_;  // of the request being scheduled
  int64_t encoder_plan_tokens_ = 0;
  int64_t num_encoded_images_ = 0;
  int64_t num_encoded_image_tokens_ = 0;
};

}  // namespace pagedllm
