// `pagedllm generate`: offline generation, one prompt streamed or many through continuous
// batching.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_generate_command(CLI::App& app, int& exit_code);

}  // namespace pagedllm::cli
