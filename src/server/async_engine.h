// The engine loop: one thread owns the Engine (and through it the compute threads) and runs
// step() while there is work. HTTP threads hand it tokenized requests and aborts through
// queues and get token events back through a RequestChannel, so neither side waits on the
// other's work: tokenizing, detokenizing and writing sockets never stall a step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pagedllm/engine.h"
#include "server/metrics.h"

namespace pagedllm::server {

// What one engine step produced for one choice.
struct TokenEvent {
  size_t choice = 0;
  std::vector<int32_t> token_ids;
  std::vector<SampledToken> logprobs;
  bool finished = false;
  std::string finish_reason;  // "stop", "length" or "abort" once finished
};

// The events of all choices of one HTTP request, from the engine thread to the HTTP thread.
class RequestChannel {
 public:
  void push(TokenEvent event);
  // A failure that ends every choice (the request could not be added: 500; the engine
  // failed: 503).
  void fail(const std::string& message, int status = 500);
  // Waits up to `timeout` for events; returns those that arrived, in order.
  std::vector<TokenEvent> wait(std::chrono::milliseconds timeout);
  std::optional<std::string> error() const;
  int error_status() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  std::optional<std::string> error_;
  int error_status_ = 500;
};

struct Submission {
  std::string request_id;
  size_t choice = 0;
  std::vector<int32_t> prompt_token_ids;  // one <|image_pad|> per image
  std::vector<ImageInput> images;         // prepared on the HTTP thread
  SamplingParams params;
};

struct AsyncEngineOptions {
  int max_waiting_requests = 1024;    // past this many queued requests, submit answers 503
  double log_stats_interval_s = 5.0;  // 0: no periodic stats line
};

class AsyncEngine {
 public:
  // The engine must be built with detokenize off and delta_outputs on, and outlive this.
  AsyncEngine(Engine& engine, ServerMetrics& metrics, AsyncEngineOptions options);
  ~AsyncEngine();

  // Queues all choices of one HTTP request, or none: throws ApiError(503) when the waiting
  // queue is full or the server is shutting down.
  void submit(std::vector<Submission> submissions, std::shared_ptr<RequestChannel> channel);
  // The engine frees the requests' blocks at its next step. `reason` is what the metrics count
  // ("stop" when a stop string ended it, "abort" for a disconnect).
  void abort(const std::vector<std::string>& request_ids, const std::string& reason = "abort");
  // New submissions get 503 from now on.
  void refuse_new_requests();
  // False once refuse_new_requests() or shutdown() began: preparing a request is then wasted.
  bool accepting() const { return !refusing_.load(); }
  // Waits up to `grace` for in-flight requests to finish, aborts the rest, stops the loop.
  void shutdown(std::chrono::milliseconds grace);
  int num_in_flight() const { return in_flight_.load(); }
  // A step that throws (a tensor-parallel rank died or hung) fails every request in flight or
  // queued with 503, refuses new ones with 503, and calls `handler` once with the cause, on the
  // engine thread; the engine is not stepped again.
  void on_engine_failure(std::function<void(const std::string&)> handler);
  std::optional<std::string> engine_failure() const;

 private:
  struct Tracked {
    std::shared_ptr<RequestChannel> channel;
    size_t choice = 0;
    int prompt_tokens = 0;
    int output_tokens = 0;
    std::chrono::steady_clock::time_point arrival, first_token, last_token;
    bool admitted = false;
    std::string finish_override;  // set by abort(): the reason the metrics count
  };

  void loop();
  // Runs one engine step and routes its outputs; false when the step threw.
  bool step_engine();
  void fail_everything(const std::string& cause);
  void take_queued(std::vector<std::pair<Submission, std::shared_ptr<RequestChannel>>>& adds,
                   std::vector<std::pair<std::string, std::string>>& aborts);
  void add_to_engine(Submission& s, std::shared_ptr<RequestChannel> channel);
  void route(RequestOutput& out, std::chrono::steady_clock::time_point now);
  void finish(const std::string& id, Tracked& t, const std::string& reason,
              std::chrono::steady_clock::time_point now);
  void publish_gauges();
  void maybe_log_stats(std::chrono::steady_clock::time_point now);

  Engine& engine_;
  ServerMetrics& metrics_;
  AsyncEngineOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::pair<Submission, std::shared_ptr<RequestChannel>>> pending_;
  std::vector<std::pair<std::string, std::string>> pending_aborts_;  // (id, reason)
  bool stop_ = false;
  std::optional<std::string> failure_;
  std::function<void(const std::string&)> failure_handler_;
  std::atomic<bool> refusing_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<int> engine_waiting_{0};

  // Engine-thread state.
  std::unordered_map<std::string, Tracked> tracked_;
  int64_t interval_prompt_tokens_ = 0, interval_generation_tokens_ = 0;
  std::chrono::steady_clock::time_point last_stats_log_;
  std::thread thread_;
};

}  // namespace pagedllm::server
