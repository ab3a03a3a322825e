#include "sampling/sampler.h"

#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace pagedllm {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

void mask_stop_tokens(std::span<float> logits, const SamplingContext& ctx) {
  const auto& p = *ctx.params;
  if (static_cast<int>(ctx.output_token_ids.size()) >= p.min_tokens) return;
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
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max));
  const float log_sum = static_cast<float>(std::log(sum)) + max;
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - log_sum;
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

  mask_stop_tokens(logits, ctx);
  // Penalties: repetition over prompt and output (as vLLM), frequency and presence over output.
  if (p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    counts_.assign(vocab, 0);
    for (int32_t t : ctx.output_token_ids) {
      if (t >= 0 && static_cast<size_t>(t) < vocab) ++counts_[static_cast<size_t>(t)];
    }
    seen_.assign(vocab, 0);
    for (int32_t t : ctx.prompt_token_ids) {
      if (t >= 0 && static_cast<size_t>(t) < vocab) seen_[static_cast<size_t>(t)] = 1;
    }
    for (size_t i = 0; i < vocab; ++i) {
      if ((seen_[i] || counts_[i] > 0) && p.repetition_penalty != 1.0f) {
        logits[i] =
            logits[i] > 0 ? logits[i] / p.repetition_penalty : logits[i] * p.repetition_penalty;
      }
      logits[i] -= p.frequency_penalty * static_cast<float>(counts_[i]);
      if (counts_[i] > 0) logits[i] -= p.presence_penalty;
    }
  }

  if (p.temperature <= 1e-5f) {
    result.token_id = argmax(logits);
  } else {
    for (float& l : logits) l /= p.temperature;
    // Candidates sorted by logit, best first; filters cut the tail of this order.
    order_.resize(vocab);
    std::iota(order_.begin(), order_.end(), 0);
    auto by_logit = [&](int32_t a, int32_t b) {
      const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
      return la > lb || (la == lb && a < b);
    };
    size_t keep = vocab;
    if (p.top_k > 0 && static_cast<size_t>(p.top_k) < vocab) {
      keep = static_cast<size_t>(p.top_k);
      std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(keep),
                        order_.end(), by_logit);
    } else {
      std::sort(order_.begin(), order_.end(), by_logit);
    }
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
    const double target =
        uniform_draw(ctx.seed, ctx.prompt_token_ids.size() + ctx.output_token_ids.size()) * total;
    double acc = 0.0;
    result.token_id = order_[keep - 1];
    for (size_t i = 0; i < keep; ++i) {
      acc += probs[i];
      if (target < acc) {
        result.token_id = order_[i];
        break;
      }
    }
  }

  if (p.logprobs) {
    const std::vector<float>& reported = raw_logprobs_;
    result.logprob = reported[static_cast<size_t>(result.token_id)];
    const size_t n = std::min(static_cast<size_t>(std::max(0, *p.logprobs)), vocab);
    top_.resize(vocab);
    std::iota(top_.begin(), top_.end(), 0);
    std::partial_sort(top_.begin(), top_.begin() + static_cast<std::ptrdiff_t>(n), top_.end(),
                      [&](int32_t a, int32_t b) {
                        const float la = reported[static_cast<size_t>(a)];
                        const float lb = reported[static_cast<size_t>(b)];
                        return la > lb || (la == lb && a < b);
                      });
    for (size_t i = 0; i < n; ++i) {
      result.top_logprobs.push_back({top_[i], reported[static_cast<size_t>(top_[i])]});
    }
  }
  return result;
}

}  // namespace pagedllm
