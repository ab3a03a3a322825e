#include "server/async_engine.h"

#include <pthread.h>

#include <cstdio>

#include "server/api_error.h"
#include "util/log.h"

namespace pagedllm::server {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

void RequestChannel::push(TokenEvent event) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void RequestChannel::fail(const std::string& message, int status) {
  {
    std::lock_guard lock(mutex_);
    error_ = message;
    error_status_ = status;
  }
  cv_.notify_all();
}

std::vector<TokenEvent> RequestChannel::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty() || error_.has_value(); });
  std::vector<TokenEvent> out(std::make_move_iterator(events_.begin()),
                              std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

std::optional<std::string> RequestChannel::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

int RequestChannel::error_status() const {
  std::lock_guard lock(mutex_);
  return error_status_;
}

AsyncEngine::AsyncEngine(Engine& engine, ServerMetrics& metrics, AsyncEngineOptions options)
    : engine_(engine), metrics_(metrics), options_(options), last_stats_log_(Clock::now()) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "pagedllm-engine");
    loop();
  });
}

AsyncEngine::~AsyncEngine() {
  shutdown(std::chrono::milliseconds(0));
}

void AsyncEngine::submit(std::vector<Submission> submissions,
                         std::shared_ptr<RequestChannel> channel) {
  {
    std::lock_guard lock(mutex_);
    if (failure_) throw ApiError(503, "the engine failed: " + *failure_);
    if (refusing_ || stop_) throw ApiError(503, "the server is shutting down");
    const int waiting = engine_waiting_.load() + static_cast<int>(pending_.size());
    if (waiting + static_cast<int>(submissions.size()) > options_.max_waiting_requests) {
      throw ApiError(503, "the server is overloaded: " + std::to_string(waiting) +
                              " requests are waiting (--max-waiting-requests " +
                              std::to_string(options_.max_waiting_requests) + "); retry later");
    }
    in_flight_ += static_cast<int>(submissions.size());
    for (auto& s : submissions) pending_.emplace_back(std::move(s), channel);
  }
  cv_.notify_one();
}

void AsyncEngine::abort(const std::vector<std::string>& request_ids, const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& id : request_ids) pending_aborts_.emplace_back(id, reason);
  }
  cv_.notify_one();
}

void AsyncEngine::refuse_new_requests() {
  std::lock_guard lock(mutex_);
  refusing_ = true;
}

void AsyncEngine::shutdown(std::chrono::milliseconds grace) {
  refuse_new_requests();
  const auto deadline = Clock::now() + grace;
  while (in_flight_.load() > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void AsyncEngine::take_queued(
    std::vector<std::pair<Submission, std::shared_ptr<RequestChannel>>>& adds,
    std::vector<std::pair<std::string, std::string>>& aborts) {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] {
    return stop_ || !pending_.empty() || !pending_aborts_.empty() ||
           (!failure_ && engine_.has_unfinished_requests());
  });
  adds.swap(pending_);
  aborts.swap(pending_aborts_);
  if (stop_) {
    // Whatever is still queued or running ends now, as an abort.
    for (auto& [s, channel] : adds) channel->fail("the server is shutting down");
    in_flight_ -= static_cast<int>(adds.size());
    adds.clear();
    for (const auto& [id, t] : tracked_) aborts.emplace_back(id, "abort");
  }
}

void AsyncEngine::add_to_engine(Submission& s, std::shared_ptr<RequestChannel> channel) {
  Tracked t;
  t.channel = std::move(channel);
  t.choice = s.choice;
  t.prompt_tokens = static_cast<int>(s.prompt_token_ids.size());
  for (const ImageInput& image : s.images)
    t.prompt_tokens += static_cast<int>(image.num_tokens - 1);
  t.arrival = Clock::now();
  try {
    engine_.add_request(std::move(s.prompt_token_ids), std::move(s.images), s.params, s.request_id);
  } catch (const std::invalid_argument& e) {
    // The request itself cannot run here (an image over the encoder budget, say).
    t.channel->fail(e.what(), 400);
    --in_flight_;
    return;
  } catch (const std::exception& e) {
    t.channel->fail(e.what());
    --in_flight_;
    return;
  }
  tracked_.emplace(s.request_id, std::move(t));
}

void AsyncEngine::loop() {
  std::vector<std::pair<Submission, std::shared_ptr<RequestChannel>>> adds;
  std::vector<std::pair<std::string, std::string>> aborts;
  while (true) {
    adds.clear();
    aborts.clear();
    take_queued(adds, aborts);
    for (auto& [submission, channel] : adds) add_to_engine(submission, std::move(channel));
    for (const auto& [id, reason] : aborts) {
      auto it = tracked_.find(id);
      if (it == tracked_.end()) continue;
      it->second.finish_override = reason;
      engine_.abort_request(id);
    }
    if (!failure_ && engine_.has_unfinished_requests() && !step_engine()) continue;
    publish_gauges();
    maybe_log_stats(Clock::now());
    std::lock_guard lock(mutex_);
    if (stop_ && tracked_.empty() && pending_.empty()) break;
  }
}

bool AsyncEngine::step_engine() {
  std::vector<RequestOutput> outputs;
  try {
    outputs = engine_.step();
  } catch (const std::exception& e) {
    fail_everything(e.what());
    return false;
  }
  const auto now = Clock::now();
  for (const std::string& id : engine_.last_step_admitted()) {
    auto it = tracked_.find(id);
    if (it == tracked_.end() || it->second.admitted) continue;
    it->second.admitted = true;
    metrics_.observe_queue_time(seconds(now - it->second.arrival));
    metrics_.add_prompt_tokens(it->second.prompt_tokens);
  }
  int generated = 0;
  for (const RequestOutput& out : outputs) generated += static_cast<int>(out.new_token_ids.size());
  interval_generation_tokens_ += generated;
  interval_prompt_tokens_ += std::max(0, engine_.last_step_num_scheduled_tokens() - generated);
  // Counted before any output reaches its client: a client that has its last token and
  // then reads /metrics must find it counted.
  metrics_.add_generation_tokens(generated);
  for (RequestOutput& out : outputs) route(out, now);
  return true;
}

void AsyncEngine::fail_everything(const std::string& cause) {
  log(LogLevel::kError, "engine", "step failed: " + cause + "; answering 503 from now on");
  std::function<void(const std::string&)> handler;
  {
    std::lock_guard lock(mutex_);
    failure_ = cause;
    refusing_ = true;
    for (auto& [s, channel] : pending_) channel->fail("the engine failed: " + cause, 503);
    in_flight_ -= static_cast<int>(pending_.size());
    pending_.clear();
    handler = failure_handler_;
  }
  for (auto& [id, t] : tracked_) t.channel->fail("the engine failed: " + cause, 503);
  in_flight_ -= static_cast<int>(tracked_.size());
  tracked_.clear();
  if (handler) handler(cause);
}

void AsyncEngine::on_engine_failure(std::function<void(const std::string&)> handler) {
  std::lock_guard lock(mutex_);
  failure_handler_ = std::move(handler);
}

std::optional<std::string> AsyncEngine::engine_failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void AsyncEngine::route(RequestOutput& out, Clock::time_point now) {
  auto it = tracked_.find(out.request_id);
  if (it == tracked_.end()) return;
  Tracked& t = it->second;
  const int n = static_cast<int>(out.new_token_ids.size());
  if (n > 0) {
    if (t.output_tokens == 0) {
      t.first_token = now;
      metrics_.observe_ttft(seconds(now - t.arrival));
    } else {
      metrics_.observe_time_per_output_token(seconds(now - t.last_token) / n);
    }
    t.last_token = now;
    t.output_tokens += n;
  }
  TokenEvent event;
  event.choice = t.choice;
  event.token_ids = std::move(out.new_token_ids);
  event.logprobs = std::move(out.logprobs);
  event.finished = out.finished;
  event.finish_reason = out.finish_reason;
  // Counted before the client hears of the end, so that its next /metrics read includes it.
  if (out.finished)
    finish(out.request_id, t, t.finish_override.empty() ? out.finish_reason : t.finish_override,
           now);
  t.channel->push(std::move(event));
  if (out.finished) tracked_.erase(it);
}

void AsyncEngine::finish(const std::string& id, Tracked& t, const std::string& reason,
                         Clock::time_point now) {
  const double e2e = seconds(now - t.arrival);
  metrics_.observe_finished(reason, e2e);
  --in_flight_;
  const double ttft = t.output_tokens > 0 ? seconds(t.first_token - t.arrival) : 0.0;
  const double decode_s = t.output_tokens > 1 ? seconds(t.last_token - t.first_token) : 0.0;
  const double tps = decode_s > 0 ? (t.output_tokens - 1) / decode_s : 0.0;
  log_info("request",
           format("%s: prompt %d tokens, output %d tokens, finish %s, ttft %.3f s, "
                  "e2e %.3f s, %.1f tokens/s",
                  id.c_str(), t.prompt_tokens, t.output_tokens, reason.c_str(), ttft, e2e, tps));
}

void AsyncEngine::publish_gauges() {
  const EngineStats s = engine_.stats();
  engine_waiting_ = s.num_waiting;
  metrics_.set_gauges(s);
}

void AsyncEngine::maybe_log_stats(Clock::time_point now) {
  if (options_.log_stats_interval_s <= 0) return;
  const double elapsed = seconds(now - last_stats_log_);
  if (elapsed < options_.log_stats_interval_s) return;
  const EngineStats g = metrics_.gauges();
  const bool idle = interval_prompt_tokens_ == 0 && interval_generation_tokens_ == 0 &&
                    g.num_running == 0 && g.num_waiting == 0;
  if (!idle) {
    const double hit_rate =
        g.prefix_cache_queries > 0 ? 100.0 * g.prefix_cache_hits / g.prefix_cache_queries : 0.0;
    log_info("engine",
             format("Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f "
                    "tokens/s, Running: %d reqs, Waiting: %d reqs, KV cache usage: %.1f%%, "
                    "Prefix cache hit rate: %.1f%%",
                    interval_prompt_tokens_ / elapsed, interval_generation_tokens_ / elapsed,
                    g.num_running, g.num_waiting, 100.0 * g.kv_cache_usage, hit_rate));
  }
  interval_prompt_tokens_ = interval_generation_tokens_ = 0;
  last_stats_log_ = now;
}

}  // namespace pagedllm::server
