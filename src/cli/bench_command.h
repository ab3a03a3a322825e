// `pagedllm bench latency|throughput`: the counterparts of llama-bench and
// `vllm bench throughput`.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_bench_command(CLI::App& app, int& exit_code);

}  // namespace pagedllm::cli
