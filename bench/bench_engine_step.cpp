// Cost of the engine's bookkeeping per step: schedule + update_states + prepare_inputs, with
// 256 running requests and an 8192-token budget (the model is not run).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "core/scheduler.h"
#include "worker/model_runner.h"

namespace {

using namespace pagedllm;

EngineConfig bench_config(int num_seqs) {
  EngineConfig cfg;
  cfg.cache.block_size = 16;
  cfg.scheduler.max_model_len = 4096;
  cfg.scheduler.max_num_seqs = num_seqs;
  cfg.scheduler.max_num_batched_tokens = 8192;
  cfg.cache.num_blocks = num_seqs * (4096 / 16) + 1;
  return cfg;
}

// Steady-state decode: every step schedules one token for each of num_seqs requests.
void BM_DecodeStep(benchmark::State& state) {
  const int num_seqs = static_cast<int>(state.range(0));
  const EngineConfig cfg = bench_config(num_seqs);
  Scheduler scheduler(cfg);
  ModelRunner runner(cfg);
  for (int i = 0; i < num_seqs; ++i) {
    SamplingParams p;
    p.max_tokens = 3000;
    p.ignore_eos = true;
    std::vector<int32_t> prompt(128);
    for (int t = 0; t < 128; ++t) prompt[static_cast<size_t>(t)] = (i * 131 + t * 7) % 32000;
    scheduler.add_request(std::make_unique<Request>("req-" + std::to_string(i), prompt, p));
  }
  SchedulerOutput out;
  ModelRunnerOutput runner_out;
  std::vector<EngineCoreOutput> outputs;
  auto feed_back = [&] {
    runner_out.resize(out.num_scheduled_tokens.size());
    for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
      runner_out.req_ids[k] = out.num_scheduled_tokens[k].req_id;
      runner_out.sampled_token_ids[k].push_back(17);
    }
    outputs.clear();
    scheduler.update_from_output(out, runner_out, outputs);
  };
  // Prefill all prompts (two 8192-token steps) before measuring.
  while (true) {
    scheduler.schedule(out);
    runner.update_states(out);
    runner.prepare_inputs();
    feed_back();
    if (out.total_num_scheduled_tokens == num_seqs) break;
  }
  int64_t tokens = 0;
  for (auto _ : state) {
    scheduler.schedule(out);
    runner.update_states(out);
    benchmark::DoNotOptimize(runner.prepare_inputs());
    state.PauseTiming();
    tokens += out.total_num_scheduled_tokens;
    feed_back();
    state.ResumeTiming();
  }
  state.counters["tokens_per_step"] =
      static_cast<double>(tokens) / static_cast<double>(state.iterations());
}
// 2000 steps stay within every request's 3000 output tokens, so each step decodes all 256.
BENCHMARK(BM_DecodeStep)->Arg(256)->Iterations(2000)->Unit(benchmark::kMicrosecond);

// Mixed steps: a stream of 512-token prompts chunked into an 8192 budget while 256 decode.
void BM_MixedStep(benchmark::State& state) {
  const EngineConfig cfg = bench_config(256);
  Scheduler scheduler(cfg);
  ModelRunner runner(cfg);
  int next_id = 0;
  auto add = [&](int prompt_len, int max_tokens) {
    SamplingParams p;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
    for (int t = 0; t < prompt_len; ++t)
      prompt[static_cast<size_t>(t)] = (next_id * 31 + t) % 32000;
    scheduler.add_request(std::make_unique<Request>("r" + std::to_string(next_id++), prompt, p));
  };
  for (int i = 0; i < 256; ++i) add(512, 64 + (i % 64));
  SchedulerOutput out;
  ModelRunnerOutput runner_out;
  std::vector<EngineCoreOutput> outputs;
  int64_t tokens = 0;
  for (auto _ : state) {
    scheduler.schedule(out);
    runner.update_states(out);
    benchmark::DoNotOptimize(runner.prepare_inputs());
    state.PauseTiming();
    tokens += out.total_num_scheduled_tokens;
    runner_out.resize(out.num_scheduled_tokens.size());
    for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
      runner_out.req_ids[k] = out.num_scheduled_tokens[k].req_id;
      runner_out.sampled_token_ids[k].push_back(17);
    }
    outputs.clear();
    scheduler.update_from_output(out, runner_out, outputs);
    for (const auto& o : outputs) {
      if (o.finish_reason) add(512, 64);
    }
    state.ResumeTiming();
  }
  state.counters["tokens_per_step"] =
      static_cast<double>(tokens) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_MixedStep)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
