#include "util/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pagedllm {

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double rank = q / 100.0 * static_cast<double>(samples.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, samples.size() - 1);
  return samples[lo] + (samples[hi] - samples[lo]) * (rank - static_cast<double>(lo));
}

LatencySummary summarize(const std::vector<double>& samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / samples.size();
  s.median = percentile(samples, 50);
  s.p90 = percentile(samples, 90);
  s.p99 = percentile(samples, 99);
  s.max = *std::max_element(samples.begin(), samples.end());
  return s;
}

}  // namespace pagedllm
