// The engine's knobs as CLI flags, shared by every subcommand that runs a model.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "pagedllm/engine.h"

namespace pagedllm::cli {

void add_engine_flags(CLI::App* cmd, EngineOptions& options);

// Loads the engine and says on stderr what it chose: "pagedllm[ who]: model=... threads=...".
std::unique_ptr<Engine> open_engine(const EngineOptions& options, const std::string& who = "");

}  // namespace pagedllm::cli
