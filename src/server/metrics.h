// Prometheus metrics under vLLM's names with a `pagedllm:` prefix, rendered for GET /metrics.
// Counters and histograms are updated by the engine loop; gauges are a snapshot it publishes
// after every step. All members are safe to call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "pagedllm/engine.h"

namespace pagedllm::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // The _bucket / _sum / _count lines, with cumulative counts and the +Inf bucket.
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last one is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  explicit ServerMetrics(std::string model_name);

  void set_gauges(const EngineStats& gauges);
  EngineStats gauges() const;
  void add_prompt_tokens(int64_t n);
  void add_generation_tokens(int64_t n);
  void observe_queue_time(double seconds);
  void observe_ttft(double seconds);
  void observe_time_per_output_token(double seconds);
  // A finished request: its reason ("stop", "length", "abort") and end-to-end latency.
  void observe_finished(const std::string& reason, double e2e_seconds);

  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::string labels_;  // model_name="..."
  EngineStats gauges_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  std::map<std::string, int64_t> finished_;
  Histogram ttft_, tpot_, e2e_, queue_;
};

}  // namespace pagedllm::server
