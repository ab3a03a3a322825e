// `pagedllm bench structured`: the MaskBench counterpart. Compiles every schema of a MaskBench
// folder and walks each test instance's tokens through the grammar's masks, one thread.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_bench_structured_subcommand(CLI::App* bench, int& exit_code);

}  // namespace pagedllm::cli
