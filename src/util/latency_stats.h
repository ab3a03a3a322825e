// Summary statistics of latency samples, as `vllm bench serve` reports them.
#pragma once

#include <vector>

namespace pagedllm {

struct LatencySummary {
  double mean = 0, median = 0, p90 = 0, p99 = 0, max = 0;
};

// Percentiles interpolate linearly between order statistics (numpy's default), so the
// figures compare with vLLM's. An empty sample gives all zeros.
double percentile(std::vector<double> samples, double q);
LatencySummary summarize(const std::vector<double>& samples);

}  // namespace pagedllm
