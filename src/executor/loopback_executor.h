// An in-process runner reached only through bytes: every step's SchedulerOutput is serialized,
// decoded on the runner's side, and the ModelRunnerOutput comes back the same way, exactly as
// a runner in another process would see them. It proves the seam: an engine on this executor
// must produce what an engine on UniProcExecutor produces.
#pragma once

#include <cstddef>

#include "executor/executor.h"
#include "model/model.h"

namespace pagedllm {

class LoopbackExecutor : public Executor {
 public:
  // The model must outlive the executor.
  LoopbackExecutor(const EngineConfig& config, Model& model, RunnerOptions options = {});
  void execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) override;
  const ModelRunner* local_runner() const override { return &runner_; }

  // Bytes sent each way so far.
  size_t bytes_to_runner() const { return bytes_to_runner_; }
  size_t bytes_from_runner() const { return bytes_from_runner_; }

 private:
  ModelRunner runner_;
  Model& model_;
  ModelRunnerOutput runner_side_;
  size_t bytes_to_runner_ = 0;
  size_t bytes_from_runner_ = 0;
};

}  // namespace pagedllm
