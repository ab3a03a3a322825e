// `pagedllm trace`: runs the real scheduler, KV manager, input batch and prepare_inputs on a
// scenario, with the weightless StandInModel, and describes every step as JSON. Its use is
// capacity planning: how a workload batches, where it preempts, how much KV it needs.
//
// Fixed rules, so that every build gives the same numbers:
//  - prompt_len n gives the prompt (1000 + 37 k + 11 i) % vocab_size, i = 0..n-1, where k is
//    the request's index in the scenario's list;
//  - the token sampled after position p is (31 p + 7) % vocab_size;
//  - EOS never stops a request; it ends at max_tokens (default: up to max_model_len) or abort;
//  - steps count from 0, idle steps included; a request joins the waiting queue just before
//    step arrival_step, and abort_step aborts it just before that step.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_core.h"
#include "model/stand_in_model.h"

namespace pagedllm {

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceRequestSpec {
  std::string id;
  std::vector<int32_t> prompt_token_ids;
  int max_tokens = 0;
  int min_tokens = 0;
  int arrival_step = 0;
  std::optional<int> abort_step;
  int priority = 0;
  std::string cache_salt;
};

struct TraceScenario {
  EngineConfig config;
  int vocab_size = 512;
  std::vector<TraceRequestSpec> requests;
};

// Throws ScenarioError naming the offending field.
TraceScenario parse_scenario(const nlohmann::json& doc);
TraceScenario load_scenario_file(const std::string& path);

struct TraceRequestResult {
  std::vector<int32_t> output_token_ids;
  std::optional<FinishReason> finish_reason;
};

class TraceRunner {
 public:
  // Throws ConfigError or RequestRejected for a scenario the engine refuses.
  explicit TraceRunner(TraceScenario scenario);

  bool done() const { return num_ended_ == scenario_.requests.size(); }
  // Applies this step's arrivals and aborts, runs one engine step, and advances the step
  // counter. Returns true when the step scheduled at least one token.
  bool step();
  // The JSON line of the step just run. Call only after step() returned true.
  nlohmann::ordered_json step_json() const;
  int last_step() const { return step_ - 1; }

  const EngineCore& engine() const { return *engine_; }
  const TraceScenario& scenario() const { return scenario_; }
  const std::map<std::string, TraceRequestResult>& results() const { return results_; }

 private:
  void apply_arrivals_and_aborts();
  void record_outputs(const std::vector<EngineCoreOutput>& outputs);
  void mark_ended(const std::string& id, FinishReason reason);

  TraceScenario scenario_;
  StandInModel model_;
  std::unique_ptr<EngineCore> engine_;
  int step_ = 0;
  size_t num_ended_ = 0;
  int idle_steps_without_events_ = 0;
  std::map<std::string, TraceRequestResult> results_;
  std::vector<std::string> finished_this_step_;
  std::map<std::string, int32_t> sampled_this_step_;
};

}  // namespace pagedllm
