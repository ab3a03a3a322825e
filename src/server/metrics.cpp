#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace pagedllm::server {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string escape_label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// vLLM's bucket bounds for these histograms.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                             5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                             60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name) const {
  // `name` carries the labels as name{labels}; split them to add le="...".
  const size_t brace = name.find('{');
  const std::string base = name.substr(0, brace);
  std::string labels = brace == std::string::npos ? "" : name.substr(brace + 1);
  if (!labels.empty()) labels.pop_back();  // the closing brace
  const std::string sep = labels.empty() ? "" : labels + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += base + "_bucket{" + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  const std::string suffix = labels.empty() ? "" : "{" + labels + "}";
  out += base + "_sum" + suffix + " " + number(sum_) + "\n";
  out += base + "_count" + suffix + " " + std::to_string(count_) + "\n";
}

ServerMetrics::ServerMetrics(std::string model_name)
    : labels_("model_name=\"" + escape_label(model_name) + "\""),
      ttft_(kTtftBuckets),
      tpot_(kTpotBuckets),
      e2e_(kLatencyBuckets),
      queue_(kLatencyBuckets) {
  for (const char* reason : {"stop", "length", "abort"}) finished_[reason] = 0;
}

void ServerMetrics::set_gauges(const EngineStats& gauges) {
  std::lock_guard lock(mutex_);
  gauges_ = gauges;
}

EngineStats ServerMetrics::gauges() const {
  std::lock_guard lock(mutex_);
  return gauges_;
}

void ServerMetrics::add_prompt_tokens(int64_t n) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += n;
}

void ServerMetrics::add_generation_tokens(int64_t n) {
  std::lock_guard lock(mutex_);
  generation_tokens_ += n;
}

void ServerMetrics::observe_queue_time(double seconds) {
  std::lock_guard lock(mutex_);
  queue_.observe(seconds);
}

void ServerMetrics::observe_ttft(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
}

void ServerMetrics::observe_time_per_output_token(double seconds) {
  std::lock_guard lock(mutex_);
  tpot_.observe(seconds);
}

void ServerMetrics::observe_finished(const std::string& reason, double e2e_seconds) {
  std::lock_guard lock(mutex_);
  ++finished_[reason];
  e2e_.observe(e2e_seconds);
}

std::string ServerMetrics::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  const std::string l = "{" + labels_ + "}";
  auto gauge = [&](const char* name, const char* help, const std::string& value) {
    const std::string full = std::string("pagedllm:") + name;
    header(out, full, "gauge", help);
    out += full + l + " " + value + "\n";
  };
  auto counter = [&](const char* name, const char* help, int64_t value) {
    const std::string full = std::string("pagedllm:") + name;
    header(out, full, "counter", help);
    out += full + l + " " + std::to_string(value) + "\n";
  };
  gauge("num_requests_running", "Requests in the running batch.",
        std::to_string(gauges_.num_running));
  gauge("num_requests_waiting", "Requests waiting to be scheduled.",
        std::to_string(gauges_.num_waiting));
  gauge("kv_cache_usage_perc", "Fraction of KV-cache blocks in use (1 = 100%).",
        number(gauges_.kv_cache_usage));
  counter("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
          gauges_.prefix_cache_queries);
  counter("prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
          gauges_.prefix_cache_hits);
  counter("num_preemptions_total", "Requests preempted (recomputed later).",
          gauges_.num_preemptions);
  counter("spec_decode_num_drafts_total", "Verify steps of a request that carried drafts.",
          gauges_.spec_num_drafts);
  counter("spec_decode_num_draft_tokens_total", "Draft tokens verified.",
          gauges_.spec_num_draft_tokens);
  counter("spec_decode_num_accepted_tokens_total", "Draft tokens accepted.",
          gauges_.spec_num_accepted_tokens);
  header(out, "pagedllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
         "Draft tokens accepted, by position in the draft.");
  for (size_t i = 0; i < gauges_.spec_accepted_per_position.size(); ++i) {
    out += "pagedllm:spec_decode_num_accepted_tokens_per_pos_total{" + labels_ + ",position=\"" +
           std::to_string(i) + "\"} " + std::to_string(gauges_.spec_accepted_per_position[i]) +
           "\n";
  }
  // Images: the vision encoder and its cache (as vLLM's encoder cache, in embedding tokens).
  gauge("encoder_cache_usage_perc", "Fraction of the encoder cache in use (1 = 100%).",
        number(gauges_.encoder_cache_usage));
  counter("encoder_images_total", "Images run through the vision encoder.",
          gauges_.num_encoded_images);
  counter("encoder_image_tokens_total", "Image embeddings (prompt tokens) the encoder computed.",
          gauges_.num_encoded_image_tokens);
  header(out, "pagedllm:encoder_seconds_total", "counter", "Seconds spent in the vision encoder.");
  out += "pagedllm:encoder_seconds_total" + l + " " + number(gauges_.encoder_seconds) + "\n";
  counter("prompt_tokens_total", "Prompt tokens of admitted requests.", prompt_tokens_);
  counter("generation_tokens_total", "Tokens generated.", generation_tokens_);
  header(out, "pagedllm:request_success_total", "counter", "Finished requests by reason.");
  for (const auto& [reason, n] : finished_) {
    out += "pagedllm:request_success_total{" + labels_ + ",finished_reason=\"" + reason + "\"} " +
           std::to_string(n) + "\n";
  }
  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    const std::string full = std::string("pagedllm:") + name;
    header(out, full, "histogram", help);
    h.render(out, full + l);
  };
  histogram("time_to_first_token_seconds", "Time from arrival to the first token.", ttft_);
  histogram("time_per_output_token_seconds", "Time between successive output tokens.", tpot_);
  histogram("e2e_request_latency_seconds", "Time from arrival to the last token.", e2e_);
  histogram("request_queue_time_seconds", "Time from arrival to first scheduling.", queue_);
  return out;
}

}  // namespace pagedllm::server
