#include "executor/loopback_executor.h"

#include "core/step_serialization.h"

namespace pagedllm {

LoopbackExecutor::LoopbackExecutor(const EngineConfig& config, Model& model, RunnerOptions options)
    : runner_(config, std::move(options)), model_(model) {}

void LoopbackExecutor::execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) {
  const std::vector<uint8_t> request = serialize(out);
  bytes_to_runner_ += request.size();
  const SchedulerOutput received = deserialize_scheduler_output(request);
  runner_.execute_model(received, model_, runner_side_);
  const std::vector<uint8_t> reply = serialize(runner_side_);
  bytes_from_runner_ += reply.size();
  result = deserialize_model_runner_output(reply);
}

}  // namespace pagedllm
