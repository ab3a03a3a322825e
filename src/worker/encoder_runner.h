// The image side of the worker (vLLM's _execute_mm_encoder and _gather_mm_embeddings): runs the
// vision encoder on the images the scheduler chose for this step, keeps their outputs until the
// scheduler evicts them (the worker's half of the encoder cache), and hands the model, for each
// scheduled placeholder token, its row of those outputs. It also computes M-RoPE positions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/scheduler_output.h"
#include "model/forward_inputs.h"
#include "model/vision_model.h"
#include "worker/input_batch.h"

namespace pagedllm {

class EncoderRunner {
 public:
  explicit EncoderRunner(std::shared_ptr<const VisionModel> vision);

  // A new request's M-RoPE positions for its prompt (HF's get_rope_index) and its decode delta.
  void init_request(CachedRequestState& state) const;
  // Drops evicted outputs, then encodes this step's scheduled images in one batched pass.
  void execute(const SchedulerOutput& out,
               const std::unordered_map<std::string, CachedRequestState>& requests);
  // Fills the step's M-RoPE positions and image embedding rows; both stay empty for a step
  // without image requests, which then costs nothing. Call after the token-level inputs.
  void prepare(const InputBatch& batch, ModelInputs& in);

  int hidden_size() const { return vision_->encoder->config().out_hidden_size; }
  double encoder_seconds() const { return encoder_seconds_; }
  size_t num_cached() const { return cache_.size(); }

 private:
  void compute_mrope_positions(const InputBatch& batch, ModelInputs& in);
  void gather_embeddings(const InputBatch& batch, ModelInputs& in);

  std::shared_ptr<const VisionModel> vision_;
  std::unordered_map<std::string, std::vector<float>> cache_;  // identifier -> [length, hidden]
  std::vector<int32_t> embed_rows_;
  std::vector<float> embed_values_;
  double encoder_seconds_ = 0.0;
};

}  // namespace pagedllm
