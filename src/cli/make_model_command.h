// `pagedllm make-model`: writes a model of a real shape with random weights, for benchmarks.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_make_model_command(CLI::App& app, int& exit_code);

}  // namespace pagedllm::cli
