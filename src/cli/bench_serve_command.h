// `pagedllm bench serve`: the counterpart of `vllm bench serve`. Sends streaming requests to a
// running OpenAI-compatible server (pagedllm or any other) and reports throughput and latency.
#pragma once

#include <CLI/CLI.hpp>

namespace pagedllm::cli {

void add_bench_serve_subcommand(CLI::App* bench, int& exit_code);

}  // namespace pagedllm::cli
