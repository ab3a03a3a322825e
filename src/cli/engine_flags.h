// The engine's knobs as CLI flags, shared by every subcommand that runs a model.
#pragma once

#include <CLI/CLI.hpp>

#include "pagedllm/engine.h"

namespace pagedllm::cli {

void add_engine_flags(CLI::App* cmd, EngineOptions& options);

}  // namespace pagedllm::cli
