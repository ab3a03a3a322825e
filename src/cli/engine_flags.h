// The engine's knobs as CLI flags, shared by every subcommand that runs a model.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "pagedllm/engine.h"

namespace pagedllm::cli {

void add_engine_flags(CLI::App* cmd, EngineOptions& options);

// In a tensor-parallel job (--tensor-parallel-size N under mpirun), a rank other than 0 loads its
// shard and follows rank 0's steps until rank 0 stops; returns true when this process was such a
// rank, and the command has nothing else to do. Call it with the options rank 0 opens its engine
// with, before anything a worker must not do (bind a port, read prompts). Throws when the job's
// size and the flag disagree.
bool run_as_tensor_parallel_worker(const EngineOptions& options);

// The whole of a file a flag names; throws std::runtime_error("cannot read FLAG file 'PATH'").
std::string read_flag_file(const std::string& path, const std::string& flag);

// Loads the engine and says on stderr what it chose: "pagedllm[ who]: model=... threads=...".
std::unique_ptr<Engine> open_engine(const EngineOptions& options, const std::string& who = "");

}  // namespace pagedllm::cli
