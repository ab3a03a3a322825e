#include "cli/trace_command.h"

#include <iostream>
#include <memory>
#include <string>

#include "cli/subcommand.h"
#include "engine/trace.h"

namespace pagedllm::cli {

namespace {

struct TraceOptions {
  std::string scenario_path;
  bool summary = false;
};

int run_trace(const TraceOptions& opts) {
  TraceRunner runner(load_scenario_file(opts.scenario_path));
  const auto& cfg = runner.scenario().config;
  std::cerr << "trace: block_size=" << cfg.cache.block_size
            << " num_blocks=" << cfg.cache.num_blocks
            << " max_model_len=" << cfg.scheduler.max_model_len
            << " max_num_batched_tokens=" << cfg.scheduler.max_num_batched_tokens
            << " max_num_seqs=" << cfg.scheduler.max_num_seqs
            << " chunked_prefill=" << cfg.scheduler.enable_chunked_prefill
            << " prefix_caching=" << cfg.cache.enable_prefix_caching
            << " requests=" << runner.scenario().requests.size() << "\n";
  while (!runner.done()) {
    if (runner.step()) std::cout << runner.step_json().dump() << "\n";
  }
  if (opts.summary) {
    const auto& sched = runner.engine().scheduler();
    const auto& stats = sched.kv_cache_manager().prefix_cache_stats();
    std::cerr << "trace: " << runner.last_step() + 1 << " steps, " << sched.num_preemptions_total()
              << " preemptions, prefix cache hits " << stats.hits << "/" << stats.queries
              << " tokens\n";
  }
  std::cout.flush();
  return 0;
}

}  // namespace

void add_trace_command(CLI::App& app, int& exit_code) {
  auto [cmd, opts] = add_subcommand<TraceOptions>(
      app, "trace",
      "Run the real scheduler, KV-cache manager and prepare_inputs on a scenario file with a "
      "weightless stand-in model, printing one JSON line per engine step (capacity planning)",
      exit_code, run_trace);
  cmd->add_option("--scenario", opts->scenario_path,
                  "Scenario JSON: {\"config\": {...}, \"requests\": [...]} (see docs/TRACE.md)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--summary", opts->summary,
                "Also print steps, preemptions and prefix-cache hits to stderr at the end");
}

}  // namespace pagedllm::cli
