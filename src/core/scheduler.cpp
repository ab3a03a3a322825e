#include "core/scheduler.h"

#include <algorithm>
#include <cassert>

namespace pagedllm {

void SchedulerOutput::clear() {
  scheduled_new_reqs.clear();
  scheduled_cached_reqs.clear();
  num_scheduled_tokens.clear();
  total_num_scheduled_tokens = 0;
  finished_req_ids.clear();
  preempted_req_ids.clear();
  scheduled_encoder_inputs.clear();
  free_encoder_identifiers.clear();
}

void ModelRunnerOutput::clear() {
  req_ids.clear();
  for (auto& t : sampled_token_ids) t.clear();
  for (auto& t : sampled) t.clear();
  for (auto& t : spec_token_ids) t.clear();
}

void ModelRunnerOutput::resize(size_t n) {
  clear();
  req_ids.resize(n);
  sampled_token_ids.resize(n);
  sampled.resize(n);
  spec_token_ids.resize(n);
}

namespace {

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

std::vector<int32_t> to_vector(std::span<const int32_t> s) {
  return {s.begin(), s.end()};
}

}  // namespace

Scheduler::Scheduler(const EngineConfig& config)
    : config_((config.validate(), config)),
      kv_(config.cache.num_blocks, config.cache.block_size, config.scheduler.max_model_len,
          config.cache.enable_prefix_caching),
      waiting_(config.scheduler.policy),
      encoder_cache_(config.scheduler.encoder_cache_size) {
  running_.reserve(static_cast<size_t>(config.scheduler.max_num_seqs));
  step_requests_.reserve(static_cast<size_t>(config.scheduler.max_num_seqs));
}

void Scheduler::validate_new_request(const Request& r) const {
  const auto& p = r.params();
  const int max_len = config_.scheduler.max_model_len;
  const std::string who = "request '" + r.id() + "': ";
  if (r.id().empty()) throw RequestRejected("request id must not be empty");
  if (requests_.count(r.id())) throw RequestRejected(who + "id is already in use");
  if (r.num_prompt_tokens() == 0) throw RequestRejected(who + "prompt is empty");
  if (p.max_tokens < 1) throw RequestRejected(who + "max_tokens must be at least 1");
  if (p.min_tokens < 0 || p.min_tokens > p.max_tokens) {
    throw RequestRejected(who + "min_tokens must be in [0, max_tokens]");
  }
  const int64_t total = static_cast<int64_t>(r.num_prompt_tokens()) + p.max_tokens;
  if (total > max_len) {
    throw RequestRejected(who + "prompt (" + std::to_string(r.num_prompt_tokens()) +
                          " tokens) + max_tokens (" + std::to_string(p.max_tokens) +
                          ") = " + std::to_string(total) + " exceeds max_model_len (" +
                          std::to_string(max_len) + ")");
  }
  validate_mm_features(r, who, config_.scheduler);
  // The last sampled token is never fed back, so it needs no KV slot.
  const int blocks = ceil_div(static_cast<int>(total) - 1, config_.cache.block_size);
  if (blocks > config_.cache.num_usable_blocks()) {
    throw RequestRejected(who + "needs " + std::to_string(blocks) + " KV blocks but the pool has " +
                          std::to_string(config_.cache.num_usable_blocks()));
  }
}

void Scheduler::add_request(std::unique_ptr<Request> request) {
  validate_new_request(*request);
  request->status = RequestStatus::kWaiting;
  Request* raw = request.get();
  requests_.emplace(raw->id(), std::move(request));
  waiting_.push_back(raw);
}

const Request* Scheduler::find_request(const std::string& id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

std::vector<std::string> Scheduler::finish_requests(std::span<const std::string> ids,
                                                    RequestStatus status) {
  assert(is_finished(status));
  std::vector<std::string> ended;
  for (const auto& id : ids) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    Request* r = it->second.get();
    if (r->status == RequestStatus::kRunning) {
      running_.erase(std::find(running_.begin(), running_.end(), r));
    } else {
      waiting_.remove(r);
    }
    ended.push_back(id);
    finish(r, status);
    requests_.erase(it);
  }
  return ended;
}

void Scheduler::finish(Request* request, RequestStatus status) {
  request->status = status;
  kv_.free(*request);
  encoder_cache_.free(*request);
  finished_since_last_step_.push_back(request->id());
}

int Scheduler::clamp_chunk(const Request& request, int num_new_tokens, int budget) const {
  (void)request;
  const int threshold = config_.scheduler.long_prefill_token_threshold;
  if (threshold > 0) num_new_tokens = std::min(num_new_tokens, threshold);
  return std::min(num_new_tokens, budget);
}

bool Scheduler::partial_prefill_limit_reached(const Request& request, int num_computed,
                                              int num_new_tokens) const {
  const int limit = config_.scheduler.max_num_partial_prefills;
  const bool stays_partial = num_computed + num_new_tokens < request.num_tokens();
  return limit > 0 && stays_partial && step_partial_prefills_ >= limit;
}

void Scheduler::schedule(SchedulerOutput& out) {
  out.clear();
  step_requests_.clear();
  step_partial_prefills_ = 0;
  out.finished_req_ids.swap(finished_since_last_step_);
  int budget = config_.scheduler.max_num_batched_tokens;
  encoder_budget_ = config_.scheduler.max_num_encoder_input_tokens;

  schedule_running(out, budget);
  // A step that had to preempt admits nobody new: the pool is already too tight.
  if (out.preempted_req_ids.empty()) schedule_waiting(out, budget);

  // Which entries of out carry drafts, by scheduling order, for update_from_output. Cached
  // requests are listed in the order they were scheduled, so one forward scan finds them all
  // (the scan before the cursor is only a safety net).
  step_drafts_.assign(step_requests_.size(), nullptr);
  size_t cursor = 0;
  for (const CachedRequestData& c : out.scheduled_cached_reqs) {
    if (c.spec_token_ids.empty()) continue;
    size_t i = cursor;
    while (i < step_requests_.size() && step_requests_[i]->id() != c.req_id) ++i;
    if (i == step_requests_.size()) {  // not after the cursor: look before it
      for (i = 0; i < cursor && step_requests_[i]->id() != c.req_id;) ++i;
      if (i == cursor) continue;
    }
    step_drafts_[i] = &c.spec_token_ids;
    cursor = i + 1;
  }
  out.free_encoder_identifiers = encoder_cache_.take_freed();
  // num_computed_tokens counts this step's tokens from now on, as in vLLM.
  for (size_t i = 0; i < step_requests_.size(); ++i) {
    const int n = out.num_scheduled_tokens[i].num_tokens;
    step_requests_[i]->num_computed_tokens += n;
    out.total_num_scheduled_tokens += n;
  }
}

void Scheduler::schedule_running(SchedulerOutput& out, int& budget) {
  size_t index = 0;
  while (index < running_.size() && budget > 0) {
    Request* r = running_[index];
    trim_drafts(*r);
    // Draft tokens ride after the pending token; a short budget verifies fewer of them.
    const int with_drafts = r->num_tokens() + static_cast<int>(r->spec_token_ids.size());
    int n = clamp_chunk(*r, with_drafts - r->num_computed_tokens, budget);
    if (n > 0) n = plan_encoder_inputs(*r, r->num_computed_tokens, n);
    if (n <= 0 || partial_prefill_limit_reached(*r, r->num_computed_tokens, n)) {
      ++index;
      continue;
    }
    const int num_drafts = std::max(0, r->num_computed_tokens + n - r->num_tokens());
    scratch_block_ids_.clear();
    bool scheduled = true;
    while (!kv_.allocate_slots(*r, n, nullptr, scratch_block_ids_, num_drafts)) {
      Request* victim = preempt_one(out, index, budget);
      if (victim == r) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    commit_encoder_inputs(*r, out);
    if (r->num_computed_tokens + n < r->num_tokens()) ++step_partial_prefills_;
    r->spec_token_ids.resize(static_cast<size_t>(num_drafts));
    out.scheduled_cached_reqs.push_back({r->id(), scratch_block_ids_, r->num_computed_tokens,
                                         /*resumed_from_preemption=*/false, r->spec_token_ids});
    r->spec_token_ids.clear();
    out.num_scheduled_tokens.push_back({r->id(), n});
    step_requests_.push_back(r);
    budget -= n;
    ++index;
  }
}

Request* Scheduler::preempt_one(SchedulerOutput& out, size_t& next_index, int& budget) {
  size_t victim_index = running_.size() - 1;
  if (config_.scheduler.policy == SchedulingPolicy::kPriority) {
    // The lowest priority (largest value), then the latest arrival.
    for (size_t i = 0; i < running_.size(); ++i) {
      const Request* a = running_[i];
      const Request* b = running_[victim_index];
      if (std::pair(a->priority(), a->arrival_time()) >
          std::pair(b->priority(), b->arrival_time())) {
        victim_index = i;
      }
    }
  }
  Request* victim = running_[victim_index];
  if (victim_index < next_index) {
    unschedule(victim, out, budget);
    --next_index;
  }
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(victim_index));
  kv_.free(*victim);
  encoder_cache_.free(*victim);
  victim->status = RequestStatus::kPreempted;
  victim->num_computed_tokens = 0;
  victim->spec_token_ids.clear();
  victim->num_preemptions += 1;
  ++num_preemptions_total_;
  waiting_.push_front(victim);
  out.preempted_req_ids.push_back(victim->id());
  return victim;
}

// Takes back a request that was already scheduled in this step (priority preemption only).
void Scheduler::unschedule(Request* request, SchedulerOutput& out, int& budget) {
  auto it = std::find(step_requests_.begin(), step_requests_.end(), request);
  if (it == step_requests_.end()) return;
  const auto pos = it - step_requests_.begin();
  const int n = out.num_scheduled_tokens[static_cast<size_t>(pos)].num_tokens;
  if (request->num_computed_tokens + n < request->num_tokens()) --step_partial_prefills_;
  budget += n;
  step_requests_.erase(it);
  out.num_scheduled_tokens.erase(out.num_scheduled_tokens.begin() + pos);
  auto& cached = out.scheduled_cached_reqs;
  cached.erase(std::find_if(cached.begin(), cached.end(),
                            [&](const auto& c) { return c.req_id == request->id(); }));
}

void Scheduler::schedule_waiting(SchedulerOutput& out, int& budget) {
  const auto& sc = config_.scheduler;
  while (!waiting_.empty() && budget > 0) {
    if (static_cast<int>(running_.size()) >= sc.max_num_seqs) break;
    Request* r = waiting_.front();
    ComputedBlocks hit = kv_.get_computed_blocks(*r);
    const int remaining = r->num_tokens() - hit.num_tokens;
    if (!sc.enable_chunked_prefill && remaining > budget) break;  // head-of-line blocking
    const int chunk = clamp_chunk(*r, remaining, budget);
    const int n = plan_encoder_inputs(*r, hit.num_tokens, chunk);
    // An image that cannot be encoded now holds the queue, as a prompt that does not fit does.
    if (n <= 0 || (!sc.enable_chunked_prefill && n < chunk)) break;
    if (partial_prefill_limit_reached(*r, hit.num_tokens, n)) break;
    scratch_block_ids_.clear();
    if (!kv_.allocate_slots(*r, n, &hit, scratch_block_ids_)) break;

    waiting_.pop_front();
    commit_encoder_inputs(*r, out);
    running_.push_back(r);
    const bool resumed = r->status == RequestStatus::kPreempted;
    r->status = RequestStatus::kRunning;
    r->num_computed_tokens = hit.num_tokens;
    if (r->num_cached_tokens < 0) r->num_cached_tokens = hit.num_tokens;
    if (hit.num_tokens + n < r->num_tokens()) ++step_partial_prefills_;
    auto all_blocks = to_vector(kv_.block_ids(*r));
    if (resumed) {
      out.scheduled_cached_reqs.push_back(
          {r->id(), std::move(all_blocks), hit.num_tokens, true, {}});
    } else {
      out.scheduled_new_reqs.push_back({r->id(), to_vector(r->prompt_token_ids()), r->params(),
                                        std::move(all_blocks), hit.num_tokens, r->eos_token_id(),
                                        r->mm_features});
    }
    out.num_scheduled_tokens.push_back({r->id(), n});
    step_requests_.push_back(r);
    budget -= n;
  }
}

bool Scheduler::check_stop(Request& r) const {
  const auto& p = r.params();
  if (r.num_tokens() >= config_.scheduler.max_model_len || r.num_output_tokens() >= p.max_tokens) {
    r.status = RequestStatus::kFinishedLengthCapped;
    return true;
  }
  if (r.num_output_tokens() < p.min_tokens) return false;
  const int32_t last = r.output_token_ids().back();
  if (!p.ignore_eos && r.eos_token_id() && last == *r.eos_token_id()) {
    r.status = RequestStatus::kFinishedStopped;
    return true;
  }
  if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), last) != p.stop_token_ids.end()) {
    r.status = RequestStatus::kFinishedStopped;
    r.stop_reason = last;
    return true;
  }
  return false;
}

// Drafts past the request's last possible slot (prompt + max_tokens - 1, within max_model_len)
// could never be kept: all of them accepted plus the target's own token end the request.
void Scheduler::trim_drafts(Request& r) const {
  if (r.spec_token_ids.empty()) return;
  const int64_t last =
      std::min<int64_t>(config_.scheduler.max_model_len,
                        static_cast<int64_t>(r.num_prompt_tokens()) + r.params().max_tokens) -
      1;
  const int64_t room = std::max<int64_t>(0, last - r.num_tokens());
  if (static_cast<int64_t>(r.spec_token_ids.size()) > room)
    r.spec_token_ids.resize(static_cast<size_t>(room));
}

// A verify step of k drafts returns the accepted drafts and one token of the target's own: the
// rejected drafts' slots were computed for nothing, so num_computed_tokens steps back over them
// (their KV is overwritten when those positions are computed again).
void Scheduler::settle_drafts(Request& r, const std::vector<int32_t>& drafts, size_t num_sampled) {
  const int num_drafts = static_cast<int>(drafts.size());
  const int num_accepted = std::min(num_drafts, static_cast<int>(num_sampled) - 1);
  r.num_computed_tokens -= num_drafts - num_accepted;
  auto& st = spec_stats_;
  st.num_drafts += 1;
  st.num_draft_tokens += num_drafts;
  st.num_accepted_tokens += num_accepted;
  if (st.accepted_per_position.size() < drafts.size())
    st.accepted_per_position.resize(drafts.size());
  for (int p = 0; p < num_accepted; ++p) st.accepted_per_position[static_cast<size_t>(p)] += 1;
}

void Scheduler::update_from_output(const SchedulerOutput& out, const ModelRunnerOutput& runner_out,
                                   std::vector<EngineCoreOutput>& outputs) {
  assert(runner_out.req_ids.size() == step_requests_.size());
  bool any_finished = false;
  for (size_t i = 0; i < step_requests_.size(); ++i) {
    Request* r = step_requests_[i];
    assert(out.num_scheduled_tokens[i].req_id == r->id());
    assert(runner_out.req_ids[i] == r->id());
    (void)out;
    free_computed_encoder_inputs(*r);
    // A token sampled from a partial prefill is discarded.
    if (r->num_computed_tokens < r->num_tokens()) continue;
    const auto& tokens = runner_out.sampled_token_ids[i];
    if (tokens.empty()) continue;
    const auto* drafts = step_drafts_[i];
    if (drafts && !drafts->empty()) settle_drafts(*r, *drafts, tokens.size());
    EngineCoreOutput o{r->id(), {}, std::nullopt, std::nullopt, {}};
    for (size_t j = 0; j < tokens.size(); ++j) {
      r->append_output_token(tokens[j]);
      o.new_token_ids.push_back(tokens[j]);
      if (r->params().logprobs && j < runner_out.sampled[i].size()) {
        o.logprobs.push_back(runner_out.sampled[i][j]);
      }
      // The first token that ends the request ends the list: later ones are dropped.
      if (check_stop(*r)) {
        o.finish_reason = finish_reason_of(r->status);
        o.stop_reason = r->stop_reason;
        finish(r, r->status);
        any_finished = true;
        break;
      }
    }
    if (!is_finished(r->status) && i < runner_out.spec_token_ids.size()) {
      r->spec_token_ids = runner_out.spec_token_ids[i];
    }
    outputs.push_back(std::move(o));
  }
  if (!any_finished) return;
  std::erase_if(running_, [](const Request* r) { return is_finished(r->status); });
  for (const Request* r : step_requests_) {
    if (!is_finished(r->status)) continue;
    const std::string id = r->id();  // erase destroys r, and with it r->id()
    requests_.erase(id);
  }
  step_requests_.clear();
}

}  // namespace pagedllm
