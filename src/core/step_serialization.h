// The bytes that cross the core/worker boundary when the worker is not in this process: a
// SchedulerOutput going to the runner and a ModelRunnerOutput coming back, each as one
// MessagePack document (nlohmann::json's encoding). Every field travels, so a remote runner
// sees exactly what an in-process one would.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/scheduler_output.h"

namespace pagedllm {

std::vector<uint8_t> serialize(const SchedulerOutput& out);
std::vector<uint8_t> serialize(const ModelRunnerOutput& out);

// Throw std::invalid_argument for bytes that are not a document of the expected kind.
SchedulerOutput deserialize_scheduler_output(std::span<const uint8_t> bytes);
ModelRunnerOutput deserialize_model_runner_output(std::span<const uint8_t> bytes);

}  // namespace pagedllm
