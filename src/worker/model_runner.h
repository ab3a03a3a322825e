// The worker side of a step: mirror the scheduler's decisions into the persistent batch, turn
// them into model inputs, run the model, sample. It never decides who runs.
//
// Per step: update_states(out), prepare_inputs(), then the model; execute_model() does all.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config.h"
#include "core/scheduler_output.h"
#include "model/forward_inputs.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "spec_decode/proposer.h"
#include "structured/grammar_cache.h"
#include "worker/encoder_runner.h"
#include "worker/grammar_masks.h"
#include "worker/input_batch.h"

namespace pagedllm {

struct RunnerOptions {
  // Build ModelInputs::attn_mask (for kernels that want an explicit mask).
  bool build_attention_mask = false;
  // Reorder rows so that decodes come first (see model/forward_inputs.h).
  bool reorder_decodes_first = true;
  // Ascending token counts to pad num_input_tokens up to (graph-capture style); empty: none.
  std::vector<int> padding_buckets;
  // Structured outputs: the grammars bound to the model's vocabulary (shared with the engine,
  // which compiles a request's grammar when it arrives); null on ranks that do not sample.
  std::shared_ptr<structured::TokenGrammarCache> grammars;
  // Images: the model's vision encoder and M-RoPE settings; null for a text-only model.
  std::shared_ptr<const VisionModel> vision;
  // False on tensor-parallel ranks other than 0: they never sample, so they make no proposer
  // (a draft model is loaded on rank 0 only) and their drafts come with the step.
  bool samples = true;
};

class ModelRunner {
 public:
  explicit ModelRunner(const EngineConfig& config, RunnerOptions options = {});

  // Applies one SchedulerOutput to the persistent batch, as vLLM's _update_states:
  // drop finished, drop unscheduled (keeping their state), add new, update cached, condense.
  void update_states(const SchedulerOutput& out);
  // Computes every input and metadata array. Call only after update_states() for this step.
  const ModelInputs& prepare_inputs();
  // update_states + prepare_inputs + forward + sampling. result.sampled_token_ids[k]
  // belongs to out.num_scheduled_tokens[k]; empty for partial prefills.
  void execute_model(const SchedulerOutput& out, Model& model, ModelRunnerOutput& result);
  // Tensor parallelism: a rank that does not sample runs update_states + prepare_inputs + the
  // forward pass, then takes the tokens rank 0 sampled for that step (`sampled`, rank 0's
  // result) before the next update_states, as if it had sampled them itself.
  void append_sampled_tokens(const ModelRunnerOutput& sampled);

  const InputBatch& input_batch() const { return batch_; }
  const ModelInputs& inputs() const { return inputs_; }
  // Batch row of out.num_scheduled_tokens[k] for the last update_states().
  int row_of_scheduled(size_t k) const { return row_of_scheduled_[k]; }
  const CachedRequestState* request_state(const std::string& req_id) const;
  // Null for a text-only model.
  const EncoderRunner* encoder() const { return encoder_.get(); }

 private:
  static size_t advance_to(const SchedulerOutput& out, size_t& cursor, const std::string& id);
  void find_scheduled_states(const SchedulerOutput& out);
  void drop_unscheduled();
  void apply_cached(const CachedRequestData& c, CachedRequestState& s,
                    std::vector<CachedRequestState*>& to_add);
  void map_scheduled_rows(const SchedulerOutput& out);
  void reorder_decodes_first();
  void compute_token_level();
  void compute_request_level();
  void compute_split_view();
  void compute_attention_state();
  void compute_attention_mask();
  int padded_token_count(int n) const;
  void sample_rows(const ModelInputs& in, size_t vocab);
  void sample_row(const ModelInputs& in, size_t vocab, int row, Sampler& sampler);
  void propose_drafts(const ModelInputs& in, int row, CachedRequestState& s);
  void propose_batched(int rows);

  EngineConfig config_;
  RunnerOptions options_;
  int block_size_;
  int max_model_len_;
  std::unordered_map<std::string, CachedRequestState> requests_;
  InputBatch batch_;
  ModelInputs inputs_;
  // This step's schedule, by row and by scheduler order.
  std::vector<int32_t> row_num_scheduled_;
  std::vector<int32_t> sched_index_of_row_;
  std::vector<int32_t> row_of_scheduled_;
  std::vector<uint8_t> row_is_scheduled_;
  std::vector<CachedRequestState*> scratch_to_add_;
  // CachedRequestState of out.num_scheduled_tokens[k] (null for a request new this step).
  std::vector<CachedRequestState*> scheduled_states_;
  std::vector<float> logits_;
  std::vector<std::vector<SampledToken>> sampled_by_row_;
  std::vector<Sampler> samplers_;                    // one per OpenMP thread that samples
  std::unique_ptr<Proposer> proposer_;               // null without speculation
  std::vector<std::vector<int32_t>> drafts_by_row_;  // proposed this step, for the next
  std::vector<int> wanted_drafts_;                   // per row, for a batched proposer
  std::vector<ProposalRequest> proposals_;
  GrammarMasks grammar_masks_;
  std::unique_ptr<EncoderRunner> encoder_;  // null for a text-only model
};

}  // namespace pagedllm
