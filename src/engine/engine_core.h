// One engine step end to end: schedule -> execute_model (update_states -> prepare_inputs ->
// forward -> sample, behind the executor) -> update_from_output. The core and the worker meet
// only through the executor.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "executor/executor.h"
#include "model/model.h"

namespace pagedllm {

class EngineCore {
 public:
  // Throws ConfigError for a configuration that cannot work.
  EngineCore(const EngineConfig& config, std::unique_ptr<Executor> executor);
  // The runner in this process (UniProcExecutor); the model must outlive the engine.
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
  const Executor& executor() const { return *executor_; }
  // The executor's in-process runner; throws std::logic_error when it has none.
  const ModelRunner& runner() const;

 private:
  Scheduler scheduler_;
  std::unique_ptr<Executor> executor_;
  SchedulerOutput sched_out_;
  ModelRunnerOutput runner_out_;
  std::vector<EngineCoreOutput> outputs_;
};

}  // namespace pagedllm
