// The runner in this process, called directly: what the engine uses on one machine.
#pragma once

#include "executor/executor.h"
#include "model/model.h"

namespace pagedllm {

class UniProcExecutor : public Executor {
 public:
  // The model must outlive the executor.
  UniProcExecutor(const EngineConfig& config, Model& model, RunnerOptions options = {});
  void execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) override;
  const ModelRunner* local_runner() const override { return &runner_; }

 private:
  ModelRunner runner_;
  Model& model_;
};

}  // namespace pagedllm
