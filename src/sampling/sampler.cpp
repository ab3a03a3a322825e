#include "sampling/sampler.h"

#include <xmmintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "kernels/cpu/logits_row.h"
#include "sampling/candidates.h"

namespace pagedllm {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

bool is_allowed(const uint32_t* words, int32_t id) {
  return (words[static_cast<uint32_t>(id) / 32] >> (static_cast<uint32_t>(id) % 32)) & 1u;
}

void mask_disallowed(std::span<float> logits, const uint32_t* words) {
  const size_t n = logits.size();
  for (size_t w = 0; w * 32 < n; ++w) {
    const uint32_t bits = words[w];
    if (bits == 0xFFFFFFFFu) continue;
    const size_t end = std::min(n, w * 32 + 32);
    for (size_t i = w * 32; i < end; ++i) {
      if (!((bits >> (i - w * 32)) & 1u)) logits[i] = kNegInf;
    }
  }
}

// Whether the grammar allows a token that min_tokens does not hold back. When it allows only
// stop tokens (the output is complete), the grammar wins: there is nothing else to draw.
bool grammar_allows_more_than_stops(size_t vocab, const SamplingContext& ctx) {
  size_t allowed = 0;
  for (size_t w = 0; w * 32 < vocab; ++w) allowed += std::popcount(ctx.allowed_tokens[w]);
  // Allowed stop tokens, each counted once (EOS may be among stop_token_ids, or listed twice).
  const std::vector<int32_t>& listed = ctx.params->stop_token_ids;
  auto allowed_stop = [&](int32_t id) {
    return id >= 0 && static_cast<size_t>(id) < vocab && is_allowed(ctx.allowed_tokens, id);
  };
  size_t allowed_stops = 0;
  for (size_t i = 0; i < listed.size(); ++i) {
    if (allowed_stop(listed[i]) &&
        std::find(listed.begin(), listed.begin() + i, listed[i]) == listed.begin() + i)
      ++allowed_stops;
  }
  const bool eos_stops = ctx.eos_token_id && !ctx.params->ignore_eos;
  if (eos_stops && allowed_stop(*ctx.eos_token_id) &&
      std::find(listed.begin(), listed.end(), *ctx.eos_token_id) == listed.end())
    ++allowed_stops;
  return allowed > allowed_stops;
}

void mask_stop_tokens(std::span<float> logits, const SamplingContext& ctx) {
  const auto& p = *ctx.params;
  if (static_cast<int>(ctx.output_token_ids.size()) >= p.min_tokens) return;
  if (ctx.allowed_tokens && !grammar_allows_more_than_stops(logits.size(), ctx)) return;
  auto mask = [&](int32_t id) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size())
      logits[static_cast<size_t>(id)] = kNegInf;
  };
  if (ctx.eos_token_id && !p.ignore_eos) mask(*ctx.eos_token_id);
  for (int32_t id : p.stop_token_ids) mask(id);
}

}  // namespace

int32_t argmax(std::span<const float> v) {
  // std::max_element's answer in two passes (its serial compare per element cost a batch of 32
  // llama-1b rows about 2 % of a decode step): 32 lanes each keep the largest of their elements
  // (maxps(x, m) is `x > m ? x : m`, so it skips NaN, as max_element does past index 0), then
  // the first element equal to the largest of the lanes is the first maximum.
  if (v.empty() || std::isnan(v[0])) return 0;
  __m128 lane[8];
  for (__m128& l : lane) l = _mm_set1_ps(kNegInf);
  size_t i = 0;
  for (; i + 32 <= v.size(); i += 32) {
    for (int j = 0; j < 8; ++j) lane[j] = _mm_max_ps(_mm_loadu_ps(&v[i + 4 * j]), lane[j]);
  }
  alignas(16) float lanes[32];
  for (int j = 0; j < 8; ++j) _mm_store_ps(lanes + 4 * j, lane[j]);
  float largest = v[0];
  for (; i < v.size(); ++i) largest = v[i] > largest ? v[i] : largest;
  for (float m : lanes) largest = m > largest ? m : largest;
  const __m128 target = _mm_set1_ps(largest);
  size_t at = 0;
  for (; at + 4 <= v.size(); at += 4) {
    const int equal = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(&v[at]), target));
    if (equal != 0) return static_cast<int32_t>(at + static_cast<size_t>(__builtin_ctz(equal)));
  }
  return static_cast<int32_t>(
      std::find(v.begin() + static_cast<std::ptrdiff_t>(at), v.end(), largest) - v.begin());
}

double uniform_draw(uint64_t seed, uint64_t counter) {
  const uint64_t bits = splitmix64(splitmix64(seed) ^ (counter * 0xD1B54A32D192ED03ULL));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

void log_softmax(std::span<const float> logits, std::span<float> out) {
  // out holds the exponentials first, then the log-probabilities.
  const auto n = static_cast<int64_t>(logits.size());
  const float max = cpu::row_max(logits.data(), n);
  const double sum = cpu::exp_shifted(logits.data(), n, max, out.data(), nullptr);
  const float log_sum = static_cast<float>(std::log(sum)) + max;
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - log_sum;
}

// Repetition over prompt and output (as vLLM), frequency and presence over output. Only the
// tokens that occur are visited: counts_ and seen_ are all zero between calls, set here for
// those tokens and cleared again after.
void Sampler::apply_penalties(std::span<float> logits, const SamplingContext& ctx) {
  const SamplingParams& p = *ctx.params;
  const size_t vocab = logits.size();
  counts_.resize(vocab, 0);
  seen_.resize(vocab, 0);
  touched_.clear();
  for (int32_t t : ctx.output_token_ids) {
    if (t < 0 || static_cast<size_t>(t) >= vocab) continue;
    if (counts_[static_cast<size_t>(t)]++ == 0) touched_.push_back(t);
  }
  for (int32_t t : ctx.prompt_token_ids) {
    if (t < 0 || static_cast<size_t>(t) >= vocab) continue;
    const auto i = static_cast<size_t>(t);
    if (!seen_[i] && counts_[i] == 0) touched_.push_back(t);
    seen_[i] = 1;
  }
  for (int32_t t : touched_) {
    const auto i = static_cast<size_t>(t);
    if (p.repetition_penalty != 1.0f) {
      logits[i] =
          logits[i] > 0 ? logits[i] / p.repetition_penalty : logits[i] * p.repetition_penalty;
    }
    logits[i] -= p.frequency_penalty * static_cast<float>(counts_[i]);
    if (counts_[i] > 0) logits[i] -= p.presence_penalty;
    counts_[i] = 0;
    seen_[i] = 0;
  }
}

// top-k first: the k best logits, sorted, then the filters and the draw on those alone, as
// they always ran (the same tokens for the same seed).
int32_t Sampler::draw_from_top_k(std::span<const float> logits, const SamplingParams& p, double u) {
  top_k_ids(logits, static_cast<size_t>(p.top_k), order_);
  size_t keep = order_.size();
  std::vector<float>& probs = probs_;
  probs.resize(keep);
  const float max = logits[static_cast<size_t>(order_[0])];
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp(logits[static_cast<size_t>(order_[i])] - max);
    sum += probs[i];
  }
  for (size_t i = 0; i < keep; ++i) probs[i] = static_cast<float>(probs[i] / sum);
  if (p.top_p < 1.0f) {
    double cumulative = 0.0;
    size_t n = 0;
    while (n < keep) {
      cumulative += probs[n++];
      if (cumulative >= p.top_p) break;
    }
    keep = std::max<size_t>(n, 1);
  }
  if (p.min_p > 0.0f) {
    const float threshold = p.min_p * probs[0];
    size_t n = 1;
    while (n < keep && probs[n] >= threshold) ++n;
    keep = n;
  }
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) total += probs[i];
  const double target = u * total;
  double acc = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    acc += probs[i];
    if (target < acc) return order_[i];
  }
  return order_[keep - 1];
}

// Without top-k, nothing is sorted. weights_ = exp(logit - max), so the best token weighs 1:
//  - temperature alone: the running sum over the vocabulary, block sums first, meets u * sum;
//  - top-p / min-p: only tokens that may survive become candidates. min-p keeps weights of at
//    least min_p; top-p never needs a token below (1 - top_p) * sum / vocab, since the tokens
//    above that weigh at least top_p * sum together. heaviest_prefix then cuts the top-p
//    prefix, and the draw runs over what is left, in its order; from kCutFrom candidates,
//    heaviest_prefix_cut finds the same prefix without moving them, and the draw runs over
//    those within it in vocabulary order (min-p alone: over every candidate).
namespace {

// Candidates from which top-p takes heaviest_prefix_cut (its pass over a bucket table costs more
// than the quickselect on a few thousand) and min-p alone draws without gathering them.
constexpr size_t kCutFrom = 4096;

}  // namespace

int32_t Sampler::draw_from_vocabulary(std::span<const float> logits, const SamplingParams& p,
                                      double u) {
  const size_t vocab = logits.size();
  const auto n = static_cast<int64_t>(vocab);
  weights_.resize(vocab);
  block_sums_.resize((vocab + cpu::kExpBlock - 1) / cpu::kExpBlock);
  const float max = cpu::row_max(logits.data(), n);
  const double sum = cpu::exp_shifted(logits.data(), n, max, weights_.data(), block_sums_.data());
  if (p.top_p >= 1.0f && p.min_p <= 0.0f) return draw_by_blocks(u * sum);

  double floor = 0.0;
  if (p.top_p < 1.0f)
    floor = (1.0 - static_cast<double>(p.top_p)) * sum / static_cast<double>(vocab);
  if (p.min_p > 0.0f) floor = std::max(floor, static_cast<double>(p.min_p));
  // Weights of at least `floor`: above the float just below it.
  const float above = std::nextafter(static_cast<float>(floor), -1.0f);
  order_.resize(vocab + 16);  // collect_above stores whole vectors
  auto count = static_cast<size_t>(cpu::collect_above(weights_.data(), n, above, order_.data()));
  if (count == 0) return argmax(logits);  // min_p above 1: the best token alone, as before
  if (count >= kCutFrom) {
    const std::span<const int32_t> ids(order_.data(), count);
    if (p.top_p >= 1.0f)  // min-p alone: every candidate, drawn where they are
      return draw_within_cut(ids, weights_, kEveryCandidate, u * total_weight(ids, weights_));
    const double mass = static_cast<double>(p.top_p) * sum;
    if (const std::optional<PrefixCut> cut = heaviest_prefix_cut(ids, weights_, mass))
      return draw_within_cut(ids, weights_, cut->lightest, u * cut->total);
  }
  items_.resize(count);
  for (size_t i = 0; i < count; ++i)
    items_[i] = {weights_[static_cast<size_t>(order_[i])], order_[i]};
  std::span<WeightedId> candidates(items_);
  if (p.top_p < 1.0f) {
    candidates = candidates.first(heaviest_prefix(candidates, static_cast<double>(p.top_p) * sum));
  }
  double total = 0.0;
  for (const WeightedId& c : candidates) total += c.weight;
  return draw_by_weight(candidates, u * total);
}

int32_t Sampler::draw_by_blocks(double target) {
  size_t block = 0;
  double acc = 0.0;
  while (block + 1 < block_sums_.size() && acc + block_sums_[block] <= target) {
    acc += block_sums_[block++];
  }
  const size_t begin = block * static_cast<size_t>(cpu::kExpBlock);
  const size_t end = std::min(weights_.size(), begin + static_cast<size_t>(cpu::kExpBlock));
  int32_t last_positive = static_cast<int32_t>(begin);
  for (size_t i = begin; i < end; ++i) {
    if (weights_[i] <= 0.0f) continue;
    acc += weights_[i];
    if (target < acc) return static_cast<int32_t>(i);
    last_positive = static_cast<int32_t>(i);
  }
  return last_positive;
}

SampledToken Sampler::sample(std::span<float> logits, const SamplingContext& ctx) {
  const SamplingParams& p = *ctx.params;
  const size_t vocab = logits.size();
  SampledToken result;

  // Raw log-probabilities, only when the request reports them.
  if (p.logprobs) {
    raw_logprobs_.resize(vocab);
    log_softmax(logits, raw_logprobs_);
  }

  if (ctx.allowed_tokens) mask_disallowed(logits, ctx.allowed_tokens);
  mask_stop_tokens(logits, ctx);
  if (p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f)
    apply_penalties(logits, ctx);

  if (p.temperature <= 1e-5f) {
    result.token_id = argmax(logits);
  } else {
    cpu::divide_row(logits.data(), static_cast<int64_t>(vocab), p.temperature);
    const double u =
        uniform_draw(ctx.seed, ctx.prompt_token_ids.size() + ctx.output_token_ids.size());
    const bool top_k = p.top_k > 0 && static_cast<size_t>(p.top_k) < vocab;
    result.token_id = top_k ? draw_from_top_k(logits, p, u) : draw_from_vocabulary(logits, p, u);
  }

  if (p.logprobs) {
    result.logprob = raw_logprobs_[static_cast<size_t>(result.token_id)];
    const size_t n = std::min(static_cast<size_t>(std::max(0, *p.logprobs)), vocab);
    top_k_ids(raw_logprobs_, n, top_);
    for (int32_t id : top_)
      result.top_logprobs.push_back({id, raw_logprobs_[static_cast<size_t>(id)]});
  }
  return result;
}

}  // namespace pagedllm
