#include "engine/engine_core.h"

namespace pagedllm {

EngineCore::EngineCore(const EngineConfig& config, Model& model, RunnerOptions options)
    : scheduler_(config), runner_(config, std::move(options)), model_(model) {}

void EngineCore::add_request(std::unique_ptr<Request> request) {
  scheduler_.add_request(std::move(request));
}

std::vector<std::string> EngineCore::abort_requests(std::span<const std::string> ids) {
  return scheduler_.finish_requests(ids, RequestStatus::kFinishedAborted);
}

const std::vector<EngineCoreOutput>& EngineCore::step() {
  outputs_.clear();
  scheduler_.schedule(sched_out_);
  runner_.execute_model(sched_out_, model_, runner_out_);
  if (sched_out_.total_num_scheduled_tokens > 0) {
    scheduler_.update_from_output(sched_out_, runner_out_, outputs_);
  }
  return outputs_;
}

}  // namespace pagedllm
