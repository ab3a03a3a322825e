#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

struct Fixture {
  SamplingParams params;
  Ids prompt = {1, 2, 3};
  Ids output;
  std::optional<int32_t> eos;

  SampledToken draw(std::vector<float> logits, uint64_t seed) {
    Sampler sampler;
    return sampler.sample(logits, SamplingContext{&params, prompt, output, eos, seed});
  }
};

const std::vector<float> kLogits = {2.0f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, 1.5f, 0.25f};

std::vector<double> softmax(const std::vector<float>& logits, float temperature) {
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] / temperature);
  for (double& x : p) x /= sum;
  return p;
}

TEST(Sampler, GreedyTakesTheArgMax) {
  Fixture f;
  f.params.temperature = 0.0f;
  EXPECT_EQ(f.draw(kLogits, 1).token_id, 0);
  EXPECT_EQ(f.draw(kLogits, 999).token_id, 0);
}

TEST(Sampler, ArgMaxIsMaxElementsFirstMaximumOnEveryRow) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> coarse(-3, 3);
  std::uniform_int_distribution<int> special(0, 9);
  for (int trial = 0; trial < 400; ++trial) {
    // Few distinct values, so ties are common, with NaN, infinities and signed zeros mixed in,
    // over lengths around argmax's 32-element blocks (0-69: none, one and two whole blocks).
    std::vector<float> v(static_cast<size_t>(trial % 70));
    for (float& x : v) {
      const int s = special(rng);
      x = s == 0                     ? nan
          : s == 1                   ? -inf
          : s == 2                   ? -0.0f
          : s == 3 && trial % 5 == 0 ? inf
                                     : float(coarse(rng));
    }
    if (v.empty()) {
      EXPECT_EQ(argmax(v), 0);
      continue;
    }
    EXPECT_EQ(argmax(v), std::max_element(v.begin(), v.end()) - v.begin()) << "trial " << trial;
  }
  // The maximum only in the tail past the last whole block, and only in a lane's last element.
  std::vector<float> tail(37, 1.0f);
  tail[36] = 2.0f;
  EXPECT_EQ(argmax(tail), 36);
  std::vector<float> lane(32, 1.0f);
  lane[31] = 2.0f;
  lane[15] = 2.0f;
  EXPECT_EQ(argmax(lane), 15);
}

TEST(Sampler, SameSeedSameTokenDifferentSeedsSpread) {
  Fixture f;
  f.params.temperature = 1.0f;
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const int32_t a = f.draw(kLogits, seed).token_id;
    EXPECT_EQ(a, f.draw(kLogits, seed).token_id);
    seen.insert(a);
  }
  EXPECT_GE(seen.size(), 6u);
}

// Pearson's chi-square of 40000 draws against softmax(logits / T), 7 degrees of freedom; the
// 0.1 % critical value is 24.32.
TEST(Sampler, TemperatureSamplingMatchesSoftmaxByChiSquare) {
  for (float temperature : {0.7f, 1.0f, 1.6f}) {
    Fixture f;
    f.params.temperature = temperature;
    const int n = 40000;
    std::vector<int> counts(kLogits.size(), 0);
    for (int i = 0; i < n; ++i)
      ++counts[static_cast<size_t>(f.draw(kLogits, static_cast<uint64_t>(i)).token_id)];
    const auto p = softmax(kLogits, temperature);
    double chi2 = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      const double expected = n * p[i];
      chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    }
    EXPECT_LT(chi2, 24.32) << "temperature " << temperature;
  }
}

TEST(Sampler, TopKAndTopPNeverProduceExcludedTokens) {
  Fixture k;
  k.params.top_k = 3;  // tokens 0 (2.0), 6 (1.5), 1 (1.0)
  Fixture p;
  p.params.top_p = 0.5f;  // softmax: 0 -> 0.33, 6 -> 0.20: together past 0.5
  Fixture m;
  m.params.min_p = 0.5f;  // keep tokens with prob >= half of token 0's: 0 and 6
  std::set<int32_t> from_k, from_p, from_m;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    from_k.insert(k.draw(kLogits, seed).token_id);
    from_p.insert(p.draw(kLogits, seed).token_id);
    from_m.insert(m.draw(kLogits, seed).token_id);
  }
  EXPECT_EQ(from_k, (std::set<int32_t>{0, 1, 6}));
  EXPECT_EQ(from_p, (std::set<int32_t>{0, 6}));
  EXPECT_EQ(from_m, (std::set<int32_t>{0, 6}));
}

// 3000 tokens: twelve likely ones over a long tail, the tail holding about an eighth of the
// mass (so top-p cuts into the likely ones, and the tail's bound on candidates is exercised).
std::vector<float> peaked_logits() {
  std::vector<float> logits(3000, -9.0f);
  for (int i = 0; i < 12; ++i)
    logits[static_cast<size_t>(i * 250 + 7)] = 0.25f * static_cast<float>(i);
  return logits;
}

// The reference: sort best first (ties to the lower id), cut top-k, then the top-p prefix of
// the renormalized probabilities, then min-p against the best, and renormalize what is kept.
std::vector<double> filtered_softmax(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  size_t keep =
      p.top_k > 0 ? std::min<size_t>(static_cast<size_t>(p.top_k), order.size()) : order.size();
  std::vector<double> prob(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    prob[i] = std::exp(static_cast<double>(logits[static_cast<size_t>(order[i])]) / p.temperature);
    sum += prob[i];
  }
  for (double& x : prob) x /= sum;
  if (p.top_p < 1.0f) {
    double cumulative = 0;
    size_t n = 0;
    while (n < keep) {
      cumulative += prob[n++];
      if (cumulative >= p.top_p) break;
    }
    keep = n;
  }
  size_t n = 1;
  while (n < keep && prob[n] >= p.min_p * prob[0]) ++n;
  keep = n;
  std::vector<double> out(logits.size(), 0.0);
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += prob[i];
  for (size_t i = 0; i < keep; ++i) out[static_cast<size_t>(order[i])] = prob[i] / kept;
  return out;
}

// Pearson's chi-square of 30000 draws against the reference over the kept tokens, at the
// 0.1 % level (Wilson-Hilferty's critical value), and never a token the filters drop.
TEST(Sampler, FilteredSamplingMatchesTheRenormalizedReferenceByChiSquare) {
  const std::vector<float> logits = peaked_logits();
  struct Case {
    float top_p, min_p;
    int top_k;
  };
  for (const Case c : {Case{0.7f, 0.0f, 0}, Case{1.0f, 0.3f, 0}, Case{0.9f, 0.0f, 8},
                       Case{0.95f, 0.1f, 0}, Case{1.0f, 0.0f, 0}}) {
    Fixture f;
    f.params.temperature = 0.9f;
    f.params.top_p = c.top_p;
    f.params.min_p = c.min_p;
    f.params.top_k = c.top_k;
    const std::vector<double> want = filtered_softmax(logits, f.params);
    const int n = 30000;
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < n; ++i)
      ++counts[static_cast<size_t>(f.draw(logits, static_cast<uint64_t>(i)).token_id)];
    double chi2 = 0;
    int bins = 0, outside = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] == 0.0) {
        outside += counts[i];
        continue;
      }
      const double expected = n * want[i];
      if (expected < 5) continue;  // the tail of the unfiltered case: too rare to bin
      chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
      ++bins;
    }
    const std::string name = "top_p " + std::to_string(c.top_p) + " min_p " +
                             std::to_string(c.min_p) + " top_k " + std::to_string(c.top_k);
    EXPECT_EQ(outside, 0) << name;
    ASSERT_GE(bins, 2) << name;
    const double df = bins - 1, h = 2.0 / (9.0 * df);
    const double critical = df * std::pow(1.0 - h + 3.09 * std::sqrt(h), 3.0);
    EXPECT_LT(chi2, critical) << name << " over " << bins << " tokens";
  }
}

// top-p alone over a vocabulary-sized row where most tokens survive the floor, so the sampler
// takes heaviest_prefix_cut: 8 tokens above 20,000 equal ones, of which the cut keeps about a
// third (the lowest ids, as ties go). The equal tokens' bins are pooled in id order into bins
// that expect at least 50 draws each, so that a cut in the wrong place shows too.
TEST(Sampler, TopPOverAFlatVocabularyMatchesTheReferenceByChiSquare) {
  std::vector<float> logits(20000, 0.0f);
  for (int i = 0; i < 8; ++i)
    logits[static_cast<size_t>(i * 2500 + 5)] = 5.0f + 0.3f * static_cast<float>(i);
  Fixture f;
  f.params.temperature = 1.0f;
  f.params.top_p = 0.5f;
  const std::vector<double> want = filtered_softmax(logits, f.params);
  const int n = 6000;
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i)
    ++counts[static_cast<size_t>(f.draw(logits, static_cast<uint64_t>(i)).token_id)];
  double chi2 = 0, pooled_expected = 0;
  int bins = 0, outside = 0, pooled = 0, kept = 0;
  const auto add_bin = [&](double observed, double expected) {
    chi2 += (observed - expected) * (observed - expected) / expected;
    ++bins;
  };
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == 0.0) {
      outside += counts[i];
      continue;
    }
    ++kept;
    const double expected = n * want[i];
    if (expected >= 50) {
      add_bin(counts[i], expected);
      continue;
    }
    pooled_expected += expected;
    pooled += counts[i];
    if (pooled_expected >= 50) {
      add_bin(pooled, pooled_expected);
      pooled_expected = 0;
      pooled = 0;
    }
  }
  if (pooled_expected > 0) add_bin(pooled, pooled_expected);
  EXPECT_GT(kept, 5000);  // the cut falls among the ties
  EXPECT_LT(kept, 10000);
  EXPECT_EQ(outside, 0);
  const double df = bins - 1, h = 2.0 / (9.0 * df);
  const double critical = df * std::pow(1.0 - h + 3.09 * std::sqrt(h), 3.0);
  EXPECT_LT(chi2, critical) << "over " << bins << " bins";
}

TEST(Sampler, PenaltiesSteerAwayFromRepeatedTokens) {
  Fixture f;
  f.params.temperature = 0.0f;
  f.output = {0, 0};
  f.params.frequency_penalty = 0.3f;  // 2.0 - 0.6 = 1.4 < 1.5
  EXPECT_EQ(f.draw(kLogits, 0).token_id, 6);
  Fixture presence;
  presence.params.temperature = 0.0f;
  presence.output = {0};
  presence.params.presence_penalty = 0.6f;
  EXPECT_EQ(presence.draw(kLogits, 0).token_id, 6);
  Fixture repetition;
  repetition.params.temperature = 0.0f;
  repetition.prompt = {0};
  repetition.params.repetition_penalty = 2.0f;  // 2.0 / 2 = 1.0 < 1.5
  EXPECT_EQ(repetition.draw(kLogits, 0).token_id, 6);
}

TEST(Sampler, MinTokensMasksEosAndStopTokens) {
  Fixture f;
  f.params.temperature = 0.0f;
  f.params.min_tokens = 2;
  f.params.stop_token_ids = {6};
  f.eos = 0;
  f.output = {5};
  EXPECT_EQ(f.draw(kLogits, 0).token_id, 1);  // 0 (EOS) and 6 (stop) are masked
  f.output = {5, 5};
  EXPECT_EQ(f.draw(kLogits, 0).token_id, 0);
}

TEST(Sampler, LogprobsComeFromTheRawDistribution) {
  Fixture f;
  f.params.temperature = 0.0f;
  f.params.repetition_penalty = 5.0f;
  f.prompt = {0};
  f.params.logprobs = 3;
  const SampledToken s = f.draw(kLogits, 0);
  const auto p = softmax(kLogits, 1.0f);
  EXPECT_EQ(s.token_id, 6);
  EXPECT_NEAR(s.logprob, std::log(p[6]), 1e-5);
  ASSERT_EQ(s.top_logprobs.size(), 3u);
  EXPECT_EQ(s.top_logprobs[0].token_id, 0);
  EXPECT_EQ(s.top_logprobs[1].token_id, 6);
  EXPECT_EQ(s.top_logprobs[2].token_id, 1);
  EXPECT_NEAR(s.top_logprobs[0].logprob, std::log(p[0]), 1e-5);
}

}  // namespace
}  // namespace pagedllm
