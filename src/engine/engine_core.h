// One engine step end to end: schedule -> update_states -> prepare_inputs -> forward ->
// sample -> update_from_output. The core and the worker meet only here.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "model/model.h"
#include "worker/model_runner.h"

namespace pagedllm {

class EngineCore {
 public:
  // The model must outlive the engine. Throws ConfigError for a configuration that cannot work.
  EngineCore(const EngineConfig& config, Model& model, RunnerOptions options = {});

  // Throws RequestRejected for a request that could never complete.
  void add_request(std::unique_ptr<Request> request);
  // Returns the ids that were actually aborted.
  std::vector<std::string> abort_requests(std::span<const std::string> ids);
  // Runs one step and returns its outputs (valid until the next step).
  const std::vector<EngineCoreOutput>& step();
  bool has_unfinished_requests() const { return scheduler_.has_unfinished_requests(); }

  const SchedulerOutput& last_scheduler_output() const { return sched_out_; }
  const Scheduler& scheduler() const { return scheduler_; }
  Scheduler& scheduler() { return scheduler_; }
  const ModelRunner& runner() const { return runner_; }

 private:
  Scheduler scheduler_;
  ModelRunner runner_;
  Model& model_;
  SchedulerOutput sched_out_;
  ModelRunnerOutput runner_out_;
  std::vector<EngineCoreOutput> outputs_;
};

}  // namespace pagedllm
