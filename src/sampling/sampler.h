// Token sampling from logits, one row per request, as vLLM's sampler orders it:
//   logprobs of the raw distribution (what `logprobs` reports)
//   -> a grammar's allowed tokens (structured outputs)
//   -> min_tokens (EOS and stop tokens masked until enough tokens exist)
//   -> repetition, frequency and presence penalties
//   -> greedy if temperature is 0, else temperature, top-k, top-p, min-p and a draw.
// Nothing sorts the vocabulary: top-k selects, top-p cuts a prefix of the survivors by a
// quickselect that carries their mass, and a plain draw runs over the exponentials in vocabulary
// order (candidates.h); a 151,936-entry row takes tens of microseconds (bench/bench_sampler).
// Each row's draw depends only on its own seed and how many tokens the request has, so the same
// seed gives the same tokens whatever the batch.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "pagedllm/sampling.h"
#include "sampling/candidates.h"

namespace pagedllm {

// What the sampler needs to know about one request.
struct SamplingContext {
  const SamplingParams* params = nullptr;
  std::span<const int32_t> prompt_token_ids;
  std::span<const int32_t> output_token_ids;
  std::optional<int32_t> eos_token_id;
  uint64_t seed = 0;  // the request's seed (or one drawn when it had none)
  // Structured outputs: bit i of word i/32 set = token i may be drawn; null: every token.
  const uint32_t* allowed_tokens = nullptr;
};

class Sampler {
 public:
  // logits: [vocab_size] of one request; modified in place.
  SampledToken sample(std::span<float> logits, const SamplingContext& ctx);

 private:
  void apply_penalties(std::span<float> logits, const SamplingContext& ctx);
  int32_t draw_from_top_k(std::span<const float> logits, const SamplingParams& p, double u);
  int32_t draw_from_vocabulary(std::span<const float> logits, const SamplingParams& p, double u);
  int32_t draw_by_blocks(double target);

  // Reused across calls: sampling runs once per request per step, over the whole vocabulary.
  std::vector<int32_t> order_, top_, touched_;
  std::vector<float> probs_, weights_, raw_logprobs_;
  std::vector<double> block_sums_;
  std::vector<WeightedId> items_;
  std::vector<int32_t> counts_;  // all zero between calls
  std::vector<uint8_t> seen_;    // all zero between calls
};

// The first index of the largest value, as std::max_element gives it: NaN is never the
// largest but at index 0, and -0.0 ties +0.0. 0 for an empty row.
int32_t argmax(std::span<const float> v);

// log-softmax of one row, written to out.
void log_softmax(std::span<const float> logits, std::span<float> out);

// A uniform draw in [0, 1) from (seed, counter): counter-based, so no state travels with a
// request.
double uniform_draw(uint64_t seed, uint64_t counter);

}  // namespace pagedllm
