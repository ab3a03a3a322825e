#include "core/request.h"

#include <utility>

namespace pagedllm {

const char* to_string(RequestStatus status) {
  switch (status) {
    case RequestStatus::kWaiting:
      return "waiting";
    case RequestStatus::kRunning:
      return "running";
    case RequestStatus::kPreempted:
      return "preempted";
    case RequestStatus::kFinishedStopped:
      return "finished_stopped";
    case RequestStatus::kFinishedLengthCapped:
      return "finished_length_capped";
    case RequestStatus::kFinishedAborted:
      return "finished_aborted";
  }
  return "unknown";
}

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
  }
  return "unknown";
}

bool is_finished(RequestStatus status) {
  return status == RequestStatus::kFinishedStopped ||
         status == RequestStatus::kFinishedLengthCapped ||
         status == RequestStatus::kFinishedAborted;
}

FinishReason finish_reason_of(RequestStatus status) {
  if (status == RequestStatus::kFinishedStopped) return FinishReason::kStop;
  if (status == RequestStatus::kFinishedLengthCapped) return FinishReason::kLength;
  return FinishReason::kAbort;
}

Request::Request(std::string id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
                 std::optional<int32_t> eos_token_id, double arrival_time, int priority)
    : id_(std::move(id)),
      all_token_ids_(std::move(prompt_token_ids)),
      num_prompt_tokens_(static_cast<int>(all_token_ids_.size())),
      params_(std::move(params)),
      eos_token_id_(eos_token_id),
      arrival_time_(arrival_time),
      priority_(priority) {}

}  // namespace pagedllm
