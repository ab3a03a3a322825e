// `pagedllm trace`: CLI front end of engine/trace.h.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

// Registers the subcommand; the callback runs the trace and prints one JSON line per step.
void add_trace_command(CLI::App& app, int& exit_code);

}  // namespace pagedllm::cli
