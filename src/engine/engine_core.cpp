#include "engine/engine_core.h"

#include <stdexcept>

#include "executor/uniproc_executor.h"

namespace pagedllm {

EngineCore::EngineCore(const EngineConfig& config, std::unique_ptr<Executor> executor)
    : scheduler_(config), executor_(std::move(executor)) {}

EngineCore::EngineCore(const EngineConfig& config, Model& model, RunnerOptions options)
    : EngineCore(config, std::make_unique<UniProcExecutor>(config, model, std::move(options))) {}

const ModelRunner& EngineCore::runner() const {
  const ModelRunner* r = executor_->local_runner();
  if (!r) throw std::logic_error("the executor's runner is not in this process");
  return *r;
}

void EngineCore::add_request(std::unique_ptr<Request> request) {
  scheduler_.add_request(std::move(request));
}

std::vector<std::string> EngineCore::abort_requests(std::span<const std::string> ids) {
  return scheduler_.finish_requests(ids, RequestStatus::kFinishedAborted);
}

const std::vector<EngineCoreOutput>& EngineCore::step() {
  outputs_.clear();
  scheduler_.schedule(sched_out_);
  executor_->execute_model(sched_out_, runner_out_);
  if (sched_out_.total_num_scheduled_tokens > 0) {
    scheduler_.update_from_output(sched_out_, runner_out_, outputs_);
  }
  return outputs_;
}

}  // namespace pagedllm
