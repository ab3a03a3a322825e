// The scheduler's image side: which encoder inputs a step runs, within the encoder budget and
// the encoder cache (vLLM's _try_schedule_encoder_inputs), and when their outputs are released.
#include <algorithm>
#include <unordered_set>

#include "core/scheduler.h"

namespace pagedllm {

void validate_mm_features(const Request& r, const std::string& who, const SchedulerConfig& sc) {
  int64_t previous_end = 0;
  for (const MultiModalFeature& f : r.mm_features) {
    if (f.length <= 0 || f.offset < previous_end || f.end() > r.num_prompt_tokens())
      throw RequestRejected(who + "image placeholders must be ordered ranges inside the prompt");
    const int64_t limit = std::min(sc.max_num_encoder_input_tokens, sc.encoder_cache_size);
    if (f.length > limit) {
      throw RequestRejected(who + "an image of " + std::to_string(f.length) +
                            " tokens exceeds the encoder budget (" + std::to_string(limit) +
                            " tokens: --max-num-encoder-input-tokens, --encoder-cache-size); "
                            "send a smaller image or lower max_pixels");
    }
    previous_end = f.end();
  }
}

// Worked example: an image at prompt tokens [10, 266), chunks of 100 tokens. Step 1 computes
// [0, 100): the image starts inside, so its encoder runs now (or, when the budget or cache is
// short, the chunk is cut to [0, 10) and the image waits). Steps 2 and 3 compute [100, 200) and
// [200, 300): the image is cached, nothing to encode; after step 3 the request computed past
// 266, so update_from_output releases its reference.
int Scheduler::plan_encoder_inputs(Request& r, int num_computed, int num_new_tokens) {
  encoder_plan_.clear();
  encoder_plan_tokens_ = 0;
  if (r.mm_features.empty() || num_new_tokens <= 0) return num_new_tokens;
  const int64_t step_end = static_cast<int64_t>(num_computed) + num_new_tokens;
  for (size_t i = 0; i < r.mm_features.size(); ++i) {
    const MultiModalFeature& f = r.mm_features[i];
    if (f.offset >= step_end) break;        // later chunks' business
    if (f.end() <= num_computed) continue;  // its tokens are in the KV cache already
    if (!config_.scheduler.enable_chunked_prefill && step_end < f.end()) {
      // Without chunked prefill an image is never split across steps.
      return static_cast<int>(std::max<int64_t>(0, f.offset - num_computed));
    }
    const bool repeated = std::any_of(encoder_plan_.begin(), encoder_plan_.end(), [&](int j) {
      return r.mm_features[static_cast<size_t>(j)].identifier == f.identifier;
    });
    if (repeated || encoder_cache_.check_and_update_cache(r, i)) continue;
    if (!encoder_cache_.can_allocate(f.length, encoder_budget_ - encoder_plan_tokens_,
                                     encoder_plan_tokens_)) {
      // The images planned so far lie before the cut and still run.
      return static_cast<int>(std::max<int64_t>(0, f.offset - num_computed));
    }
    encoder_plan_.push_back(static_cast<int>(i));
    encoder_plan_tokens_ += f.length;
  }
  return num_new_tokens;
}

void Scheduler::commit_encoder_inputs(const Request& r, SchedulerOutput& out) {
  if (encoder_plan_.empty()) return;
  for (int i : encoder_plan_) encoder_cache_.allocate(r, static_cast<size_t>(i));
  encoder_budget_ -= encoder_plan_tokens_;
  num_encoded_images_ += static_cast<int64_t>(encoder_plan_.size());
  num_encoded_image_tokens_ += encoder_plan_tokens_;
  out.scheduled_encoder_inputs.push_back({r.id(), encoder_plan_});
  encoder_plan_.clear();
  encoder_plan_tokens_ = 0;
}

void Scheduler::free_computed_encoder_inputs(const Request& r) {
  for (size_t i = 0; i < r.mm_features.size(); ++i) {
    if (r.mm_features[i].end() > r.num_computed_tokens) break;
    encoder_cache_.free_input(r, i);
  }
}

}  // namespace pagedllm
