#include "engine/trace.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace pagedllm {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw ScenarioError("scenario: " + where + " " + what);
}

int get_int(const json& obj, const char* key, int fallback, const std::string& where,
            int min_value = 0) {
  if (!obj.contains(key) || obj[key].is_null()) return fallback;
  const json& v = obj[key];
  if (!v.is_number_integer()) fail(where + "." + key, "must be an integer");
  const auto x = v.get<int64_t>();
  if (x < min_value || x > INT32_MAX) {
    fail(where + "." + key, "must be an integer >= " + std::to_string(min_value));
  }
  return static_cast<int>(x);
}

bool get_bool(const json& obj, const char* key, bool fallback, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null()) return fallback;
  if (!obj[key].is_boolean()) fail(where + "." + key, "must be true or false");
  return obj[key].get<bool>();
}

EngineConfig parse_config(const json& c, int& vocab_size) {
  if (!c.is_object()) fail("config", "must be an object");
  EngineConfig cfg;
  auto& s = cfg.scheduler;
  auto& k = cfg.cache;
  k.block_size = get_int(c, "block_size", k.block_size, "config", 1);
  s.max_model_len = get_int(c, "max_model_len", s.max_model_len, "config", 1);
  s.max_num_batched_tokens =
      get_int(c, "max_num_batched_tokens", s.max_num_batched_tokens, "config", 1);
  // vLLM requires budget >= max_num_seqs; a scenario that names only a small budget gets a
  // max_num_seqs that fits it.
  s.max_num_seqs =
      get_int(c, "max_num_seqs", std::min(s.max_num_seqs, s.max_num_batched_tokens), "config", 1);
  s.enable_chunked_prefill =
      get_bool(c, "enable_chunked_prefill", s.enable_chunked_prefill, "config");
  k.enable_prefix_caching = get_bool(c, "enable_prefix_caching", k.enable_prefix_caching, "config");
  s.long_prefill_token_threshold =
      get_int(c, "long_prefill_token_threshold", s.long_prefill_token_threshold, "config");
  s.max_num_partial_prefills =
      get_int(c, "max_num_partial_prefills", s.max_num_partial_prefills, "config");
  if (c.contains("scheduling_policy")) {
    if (!c["scheduling_policy"].is_string()) fail("config.scheduling_policy", "must be a string");
    s.policy = parse_scheduling_policy(c["scheduling_policy"].get<std::string>());
  }
  // Without an explicit pool, give every sequence room for max_model_len tokens.
  const int generous = s.max_num_seqs * cfg.max_num_blocks_per_req() + 1;
  k.num_blocks = get_int(c, "num_blocks", generous, "config", 2);
  vocab_size = get_int(c, "vocab_size", vocab_size, "config", 1);
  return cfg;
}

std::string parse_id(const json& r, size_t index) {
  const std::string where = "requests[" + std::to_string(index) + "].id";
  if (!r.contains("id")) return std::to_string(index);
  if (r["id"].is_string()) return r["id"].get<std::string>();
  if (r["id"].is_number_integer()) return std::to_string(r["id"].get<int64_t>());
  fail(where, "must be a string or an integer");
}

std::vector<int32_t> parse_prompt(const json& r, size_t index, int vocab_size) {
  const std::string where = "requests[" + std::to_string(index) + "]";
  std::vector<int32_t> prompt;
  if (r.contains("prompt_token_ids")) {
    const json& ids = r["prompt_token_ids"];
    if (!ids.is_array()) fail(where + ".prompt_token_ids", "must be an array of integers");
    for (const json& t : ids) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab_size) {
        fail(where + ".prompt_token_ids", "must hold integers in [0, vocab_size)");
      }
      prompt.push_back(t.get<int32_t>());
    }
  } else if (r.contains("prompt_len")) {
    const int n = get_int(r, "prompt_len", 0, where, 1);
    const auto k = static_cast<int64_t>(index);
    for (int i = 0; i < n; ++i) {
      prompt.push_back(static_cast<int32_t>((1000 + 37 * k + 11 * i) % vocab_size));
    }
  }
  if (prompt.empty()) fail(where, "needs a non-empty prompt_token_ids or a positive prompt_len");
  return prompt;
}

TraceRequestSpec parse_request(const json& r, size_t index, const TraceScenario& sc) {
  const std::string where = "requests[" + std::to_string(index) + "]";
  if (!r.is_object()) fail(where, "must be an object");
  TraceRequestSpec spec;
  spec.id = parse_id(r, index);
  spec.prompt_token_ids = parse_prompt(r, index, sc.vocab_size);
  const int room =
      sc.config.scheduler.max_model_len - static_cast<int>(spec.prompt_token_ids.size());
  spec.max_tokens = get_int(r, "max_tokens", std::max(room, 1), where, 1);
  spec.min_tokens = get_int(r, "min_tokens", 0, where);
  spec.arrival_step = get_int(r, "arrival_step", 0, where);
  if (r.contains("abort_step") && !r["abort_step"].is_null()) {
    spec.abort_step = get_int(r, "abort_step", 0, where);
  }
  spec.priority = get_int(r, "priority", 0, where, INT32_MIN);
  if (r.contains("cache_salt")) {
    if (!r["cache_salt"].is_string()) fail(where + ".cache_salt", "must be a string");
    spec.cache_salt = r["cache_salt"].get<std::string>();
  }
  return spec;
}

}  // namespace

TraceScenario parse_scenario(const json& doc) {
  if (!doc.is_object()) fail("document", "must be a JSON object");
  TraceScenario sc;
  sc.config = parse_config(doc.value("config", json::object()), sc.vocab_size);
  if (!doc.contains("requests") || !doc["requests"].is_array()) {
    fail("requests", "must be an array");
  }
  std::set<std::string> ids;
  for (size_t i = 0; i < doc["requests"].size(); ++i) {
    sc.requests.push_back(parse_request(doc["requests"][i], i, sc));
    if (!ids.insert(sc.requests.back().id).second) {
      fail("requests[" + std::to_string(i) + "].id", "repeats '" + sc.requests.back().id + "'");
    }
  }
  return sc;
}

TraceScenario load_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError("scenario: cannot open '" + path + "'");
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw ScenarioError("scenario: '" + path + "' is not valid JSON");
  return parse_scenario(doc);
}

TraceRunner::TraceRunner(TraceScenario scenario)
    : scenario_(std::move(scenario)), model_(scenario_.vocab_size) {
  engine_ = std::make_unique<EngineCore>(scenario_.config, model_);
  for (const auto& r : scenario_.requests) results_[r.id];
}

void TraceRunner::mark_ended(const std::string& id, FinishReason reason) {
  auto& result = results_.at(id);
  if (result.finish_reason) return;
  result.finish_reason = reason;
  ++num_ended_;
  finished_this_step_.push_back(id);
}

void TraceRunner::apply_arrivals_and_aborts() {
  for (size_t k = 0; k < scenario_.requests.size(); ++k) {
    const auto& spec = scenario_.requests[k];
    if (spec.arrival_step != step_) continue;
    if (spec.abort_step && *spec.abort_step < spec.arrival_step) continue;
    SamplingParams params;
    params.max_tokens = spec.max_tokens;
    params.min_tokens = spec.min_tokens;
    params.ignore_eos = true;
    params.temperature = 0.0f;
    auto request = std::make_unique<Request>(spec.id, spec.prompt_token_ids, params, std::nullopt,
                                             static_cast<double>(step_), spec.priority);
    request->cache_salt = spec.cache_salt;
    engine_->add_request(std::move(request));
  }
  for (const auto& spec : scenario_.requests) {
    if (!spec.abort_step || *spec.abort_step != step_) continue;
    const std::string id = spec.id;
    engine_->abort_requests(std::span(&id, 1));
    mark_ended(id, FinishReason::kAbort);
  }
}

void TraceRunner::record_outputs(const std::vector<EngineCoreOutput>& outputs) {
  for (const auto& o : outputs) {
    auto& result = results_.at(o.req_id);
    result.output_token_ids.insert(result.output_token_ids.end(), o.new_token_ids.begin(),
                                   o.new_token_ids.end());
    if (!o.new_token_ids.empty()) sampled_this_step_[o.req_id] = o.new_token_ids.back();
    if (o.finish_reason) mark_ended(o.req_id, *o.finish_reason);
  }
}

bool TraceRunner::step() {
  finished_this_step_.clear();
  sampled_this_step_.clear();
  apply_arrivals_and_aborts();
  const auto& outputs = engine_->step();
  record_outputs(outputs);
  const bool scheduled = engine_->last_scheduler_output().total_num_scheduled_tokens > 0;

  bool future_events = false;
  for (const auto& spec : scenario_.requests) {
    if (spec.arrival_step > step_ || (spec.abort_step && *spec.abort_step > step_)) {
      future_events = true;
    }
  }
  idle_steps_without_events_ =
      (!scheduled && !future_events && !done()) ? idle_steps_without_events_ + 1 : 0;
  if (idle_steps_without_events_ > 1) {
    throw ScenarioError("trace: no progress at step " + std::to_string(step_) +
                        ": requests are waiting but none can ever be scheduled");
  }
  ++step_;
  return scheduled;
}

namespace {

template <typename T>
ordered_json array_of(std::span<const T> values) {
  return ordered_json(std::vector<T>(values.begin(), values.end()));
}

template <typename T>
ordered_json head_of(const std::vector<T>& v, int n) {
  return array_of(std::span<const T>(v.data(), static_cast<size_t>(n)));
}

}  // namespace

ordered_json TraceRunner::step_json() const {
  const auto& out = engine_->last_scheduler_output();
  const auto& runner = engine_->runner();
  const auto& in = runner.inputs();
  const auto& batch = runner.input_batch();
  const auto& kv = engine_->scheduler().kv_cache_manager();
  const int n = in.num_actual_tokens;
  const int r = in.num_reqs;

  ordered_json j;
  j["step"] = step_ - 1;
  ordered_json scheduled = ordered_json::object();
  for (const auto& s : out.num_scheduled_tokens) scheduled[s.req_id] = s.num_tokens;
  j["num_scheduled_tokens"] = scheduled;
  j["total_num_scheduled_tokens"] = out.total_num_scheduled_tokens;
  ordered_json req_ids = ordered_json::array();
  for (int row = 0; row < r; ++row) req_ids.push_back(batch.req_id(row));
  j["req_ids"] = req_ids;
  j["req_indices"] = head_of(in.req_indices, n);
  j["cu_num_tokens"] = head_of(in.cu_num_tokens, r);
  j["arange"] = head_of(in.arange, n);
  j["positions"] = head_of(in.positions, n);
  j["token_indices"] = head_of(in.token_indices, n);
  j["input_ids"] = head_of(in.input_ids, n);
  j["block_table_indices"] = head_of(in.block_table_indices, n);
  j["block_numbers"] = head_of(in.block_numbers, n);
  j["block_offsets"] = head_of(in.block_offsets, n);
  j["slot_mapping"] = head_of(in.slot_mapping, n);
  j["query_start_loc"] = head_of(in.query_start_loc, r + 1);
  j["seq_lens"] = head_of(in.seq_lens, r);
  j["num_computed_tokens"] = head_of(in.num_computed_tokens, r);
  j["logits_indices"] = head_of(in.logits_indices, in.num_logits);
  j["num_reqs"] = r;
  j["num_actual_tokens"] = n;
  j["num_input_tokens"] = in.num_input_tokens;
  j["max_query_len"] = in.max_query_len;
  j["max_seq_len"] = in.max_seq_len;
  j["attn_state"] = to_string(in.attn_state);
  j["num_decodes"] = in.num_decodes;
  j["num_decode_tokens"] = in.num_decode_tokens;
  j["num_prefills"] = in.num_prefills;
  j["num_prefill_tokens"] = in.num_prefill_tokens;
  j["seq_start_loc"] = head_of(in.seq_start_loc, r + 1);

  ordered_json block_ids = ordered_json::object();
  std::vector<std::string> holders = kv.requests_holding_blocks();
  std::sort(holders.begin(), holders.end());
  for (const auto& id : holders) block_ids[id] = array_of(kv.block_ids(id));
  j["block_ids"] = block_ids;
  ordered_json block_table = ordered_json::array();
  for (int row = 0; row < r; ++row) block_table.push_back(array_of(batch.block_table().row(row)));
  j["block_table"] = block_table;
  j["num_free_blocks"] = kv.num_free_blocks();
  j["kv_cache_usage"] = kv.usage();

  ordered_json cached = ordered_json::object();
  for (const auto& nr : out.scheduled_new_reqs) cached[nr.req_id] = nr.num_computed_tokens;
  for (const auto& c : out.scheduled_cached_reqs) {
    if (c.resumed_from_preemption) cached[c.req_id] = c.num_computed_tokens;
  }
  j["num_cached_tokens"] = cached;
  ordered_json sampled = ordered_json::object();
  for (const auto& [id, token] : sampled_this_step_) sampled[id] = token;
  j["sampled_token_ids"] = sampled;
  j["preempted"] = out.preempted_req_ids;
  j["finished"] = finished_this_step_;
  return j;
}

}  // namespace pagedllm
