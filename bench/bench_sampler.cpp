// One sampled token from a 151,936-entry row (Qwen2's vocabulary) per iteration, for the
// settings clients send: greedy, plain temperature, temperature + top-p + top-k, top-p alone,
// min-p, and penalties with logprobs. The row is copied fresh each time (the sampler works in
// place), and the copy is part of the time, as it is part of a real step's.
//
// Two rows: "peaked" (a trained model's shape: a few likely tokens over a normal spread) and
// "flat" (a random-weight model: top-p keeps most of the vocabulary, the worst case).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "sampling/sampler.h"

namespace {

constexpr size_t kVocab = 151936;

std::vector<float> make_row(bool peaked) {
  std::mt19937 rng(11);
  std::normal_distribution<float> spread(0.0f, peaked ? 2.5f : 0.5f);
  std::vector<float> row(kVocab);
  for (float& l : row) l = spread(rng);
  if (peaked) {
    for (int i = 0; i < 20; ++i) row[rng() % kVocab] = 8.0f + static_cast<float>(i % 5);
  }
  return row;
}

void run(benchmark::State& state, pagedllm::SamplingParams params, bool peaked) {
  const std::vector<float> row = make_row(peaked);
  std::vector<float> work(kVocab);
  std::vector<int32_t> prompt(512), output(256);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i * 97 % kVocab);
  for (size_t i = 0; i < output.size(); ++i) output[i] = static_cast<int32_t>(i * 31 % kVocab);
  pagedllm::Sampler sampler;
  pagedllm::SamplingContext ctx;
  ctx.params = &params;
  ctx.prompt_token_ids = prompt;
  ctx.output_token_ids = output;
  ctx.eos_token_id = 2;
  uint64_t seed = 0;
  for (auto _ : state) {
    work = row;
    ctx.seed = ++seed;
    benchmark::DoNotOptimize(sampler.sample(work, ctx));
  }
  state.SetItemsProcessed(state.iterations());
}

pagedllm::SamplingParams params(float temperature, float top_p, int top_k, float min_p) {
  pagedllm::SamplingParams p;
  p.temperature = temperature;
  p.top_p = top_p;
  p.top_k = top_k;
  p.min_p = min_p;
  return p;
}

void register_all() {
  for (bool peaked : {true, false}) {
    const std::string row = peaked ? "peaked" : "flat";
    auto add = [&](const std::string& name, pagedllm::SamplingParams p) {
      benchmark::RegisterBenchmark(("Sample152k/" + row + "/" + name).c_str(),
                                   [p, peaked](benchmark::State& s) { run(s, p, peaked); })
          ->Unit(benchmark::kMicrosecond);
    };
    add("greedy", params(0.0f, 1.0f, 0, 0.0f));
    add("temperature", params(0.8f, 1.0f, 0, 0.0f));
    add("temperature_top_p_top_k", params(0.8f, 0.95f, 50, 0.0f));
    add("top_p", params(0.8f, 0.9f, 0, 0.0f));
    add("min_p", params(0.8f, 1.0f, 0, 0.05f));
    pagedllm::SamplingParams logprobs = params(0.8f, 1.0f, 0, 0.0f);
    logprobs.logprobs = 5;
    add("temperature_logprobs", logprobs);
    pagedllm::SamplingParams penalties = params(0.8f, 1.0f, 0, 0.0f);
    penalties.repetition_penalty = 1.1f;
    penalties.frequency_penalty = 0.2f;
    penalties.presence_penalty = 0.2f;
    add("temperature_penalties", penalties);
    pagedllm::SamplingParams heavy = params(0.8f, 0.95f, 0, 0.0f);
    heavy.repetition_penalty = 1.1f;
    heavy.frequency_penalty = 0.2f;
    heavy.presence_penalty = 0.2f;
    heavy.logprobs = 5;
    add("penalties_logprobs_top_p", heavy);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
