// The seam between the engine core and the model runner, as vLLM's Executor: the core hands
// over a step's SchedulerOutput and gets its ModelRunnerOutput back, and never learns where the
// runner is. Everything that crosses is serializable (core/step_serialization.h), so a runner
// in another process or on another machine is one more implementation of this interface; the
// scheduler does not change.
#pragma once

#include "core/scheduler_output.h"
#include "worker/model_runner.h"

namespace pagedllm {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one step. result.req_ids[k] is out.num_scheduled_tokens[k].
  virtual void execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) = 0;
  // The runner when it lives in this process, for traces and tests that inspect its state;
  // null otherwise.
  virtual const ModelRunner* local_runner() const { return nullptr; }
};

}  // namespace pagedllm
