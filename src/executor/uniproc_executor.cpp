#include "executor/uniproc_executor.h"

namespace pagedllm {

UniProcExecutor::UniProcExecutor(const EngineConfig& config, Model& model, RunnerOptions options)
    : runner_(config, std::move(options)), model_(model) {}

void UniProcExecutor::execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) {
  runner_.execute_model(out, model_, result);
}

}  // namespace pagedllm
