// `pagedllm serve`: the OpenAI-compatible HTTP server (the counterpart of `vllm serve`).
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_serve_command(CLI::App& app, int& exit_code);

}  // namespace pagedllm::cli
