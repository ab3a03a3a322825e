#include "cli/bench_command.h"

#include "cli/bench_images.h"

#include "cli/bench_serve_command.h"
#include "cli/bench_structured_command.h"
#include "cli/subcommand.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/engine_flags.h"
#include "distributed/communicator.h"
#include "kernels/cpu/memory_bandwidth.h"
#include "spec_decode/speculative_config.h"
#include "util/progress_bar.h"

namespace pagedllm::cli {

namespace {

using Clock = std::chrono::steady_clock;
using ordered_json = nlohmann::ordered_json;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct MeanStd {
  double mean = 0, stddev = 0;
};

MeanStd mean_std(const std::vector<double>& v) {
  MeanStd m;
  if (v.empty()) return m;
  m.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  for (double x : v) m.stddev += (x - m.mean) * (x - m.mean);
  m.stddev = v.size() > 1 ? std::sqrt(m.stddev / static_cast<double>(v.size() - 1)) : 0.0;
  return m;
}

// Distinct random prompts (BOS + random ids), so prefix caching finds nothing.
std::vector<int32_t> random_prompt(std::mt19937& rng, int len, int vocab) {
  std::vector<int32_t> p = {1};
  std::uniform_int_distribution<int32_t> pick(3, vocab - 1);
  while (static_cast<int>(p.size()) < len) p.push_back(pick(rng));
  p.resize(static_cast<size_t>(len));
  return p;
}

SamplingParams fixed_length(int max_tokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

struct LatencyOptions {
  EngineOptions engine;
  int prompt_len = 512;
  int gen_len = 128;
  int depth = 0;
  int reps = 5;
  bool json = false;
  bool bandwidth = false;
  bool warmup = true;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

bool has_first_token(const std::vector<RequestOutput>& outputs, const std::string& id) {
  for (const RequestOutput& out : outputs)
    if (out.request_id == id && !out.new_token_ids.empty()) return true;
  return false;
}

// pp: `tokens` new prompt tokens after `depth` tokens of context, as llama-bench's -d: the
// context is prefilled by a request of its own first (untimed) and then served from the prefix
// cache, so the timed request computes only the new tokens (and the context's last partial
// block). With depth 0, one prompt from an empty cache.
double time_prompt(Engine& engine, std::mt19937& rng, int depth, int tokens) {
  std::vector<int32_t> prompt;
  if (depth > 0) {
    prompt = random_prompt(rng, depth, engine.vocab_size());
    engine.add_request(prompt, fixed_length(1));
    while (engine.has_unfinished_requests()) engine.step();
  }
  const std::vector<int32_t> fresh = random_prompt(rng, tokens, engine.vocab_size());
  prompt.insert(prompt.end(), fresh.begin(), fresh.end());
  engine.add_request(prompt, fixed_length(1));
  const auto t0 = Clock::now();
  while (engine.has_unfinished_requests()) engine.step();
  return tokens / seconds_since(t0);
}

// What speculation did between two snapshots of the engine's counters, as vLLM's bench
// reports it: the share of drafts accepted, and the tokens one verify step yields on average.
struct SpecSummary {
  int64_t drafts = 0, draft_tokens = 0, accepted = 0;
  double acceptance_rate() const {
    return draft_tokens > 0 ? static_cast<double>(accepted) / static_cast<double>(draft_tokens)
                            : 0.0;
  }
  double mean_acceptance_length() const {
    return drafts > 0 ? 1.0 + static_cast<double>(accepted) / static_cast<double>(drafts) : 1.0;
  }
};

SpecSummary spec_since(const EngineStats& before, const EngineStats& after) {
  return {after.spec_num_drafts - before.spec_num_drafts,
          after.spec_num_draft_tokens - before.spec_num_draft_tokens,
          after.spec_num_accepted_tokens - before.spec_num_accepted_tokens};
}

void print_spec(const SpecSummary& s) {
  std::printf(
      "speculative decoding: %lld verify steps with drafts, %lld draft tokens, %.1f %% accepted, "
      "mean acceptance length %.2f\n",
      static_cast<long long>(s.drafts), static_cast<long long>(s.draft_tokens),
      100 * s.acceptance_rate(), s.mean_acceptance_length());
}

void add_spec_json(ordered_json& j, const SpecSummary& s) {
  j["spec_num_drafts"] = s.drafts;
  j["spec_num_draft_tokens"] = s.draft_tokens;
  j["spec_num_accepted_tokens"] = s.accepted;
  j["spec_acceptance_rate"] = s.acceptance_rate();
  j["spec_mean_acceptance_length"] = s.mean_acceptance_length();
}

// {"method": "replay"}: the tg contexts' greedy continuations, from a run without speculation,
// become the drafts, so that every draft is accepted (the upper bound of speculation).
template <typename DrawContexts>
void record_replay(LatencyOptions& o, DrawContexts&& draw_contexts,
                   const std::vector<std::vector<int32_t>>& contexts) {
  EngineOptions plain = o.engine;
  plain.speculative_config.clear();
  Engine engine(plain);
  draw_contexts(engine.vocab_size());
  const auto outputs = engine.generate(contexts, fixed_length(o.gen_len + 1));
  for (size_t i = 0; i < contexts.size(); ++i) {
    std::vector<int32_t> seq = contexts[i];
    seq.insert(seq.end(), outputs[i].token_ids.begin(), outputs[i].token_ids.end());
    o.engine.speculative_replay.push_back(std::move(seq));
  }
}

int run_latency(LatencyOptions& o) {
  if (o.engine.max_num_batched_tokens < o.prompt_len)
    o.engine.max_num_batched_tokens = o.prompt_len;
  // Without --max-model-len the pool is sized to the test, not to the model's full context
  // (a 131072-token context would not fit a default pool): the warm-up's prompt and four
  // decode steps, or the tg run's one-token prompt and its tokens, whichever is longer.
  if (o.engine.max_model_len <= 0)
    o.engine.max_model_len = o.depth + std::max(std::max(o.prompt_len, 1) + 5, o.gen_len + 2);
  if (o.depth > 0 && o.prompt_len > 0 && !o.engine.enable_prefix_caching)
    throw std::runtime_error("-d with pp needs prefix caching: the context is served from it");
  if (run_as_tensor_parallel_worker(o.engine)) return 0;
  // The tg contexts: BOS alone, or `depth` random tokens.
  std::vector<std::vector<int32_t>> contexts;
  auto draw_contexts = [&](int vocab) {
    std::mt19937 context_rng(3);
    for (int r = 0; r < o.reps; ++r)
      contexts.push_back(o.depth > 0 ? random_prompt(context_rng, o.depth, vocab)
                                     : std::vector<int32_t>{1});
  };
  if (parse_speculative_config(o.engine.speculative_config).method == SpeculativeMethod::kReplay)
    record_replay(o, draw_contexts, contexts);
  const std::unique_ptr<Engine> opened = open_engine(o.engine, "bench");
  Engine& engine = *opened;
  if (contexts.empty()) draw_contexts(engine.vocab_size());
  std::mt19937 rng(1);
  std::vector<double> pp, tg, read_gbps, ratio;
  std::unique_ptr<cpu::ReadBandwidthProbe> probe;
  if (o.bandwidth) probe = std::make_unique<cpu::ReadBandwidthProbe>();
  const double weight_gb = static_cast<double>(engine.weight_bytes()) * 1e-9;
  if (o.warmup) {
    // As llama-bench: one untimed prompt and a few decode steps, so the first timed run does
    // not pay for first-use costs (workspace growth, thread start-up, cold caches).
    engine.add_request(random_prompt(rng, std::max(o.prompt_len, 1), engine.vocab_size()),
                       fixed_length(std::min(o.gen_len, 4) + 1));
    while (engine.has_unfinished_requests()) engine.step();
  }
  ProgressBar bar("bench latency");
  EngineStats tg_stats_before, tg_stats;
  SpecSummary spec;
  // Rank 0's waits in collectives during the tg runs, against their time (tensor parallelism).
  distributed::Communicator* tp =
      distributed::Communicator::active() ? &distributed::Communicator::world() : nullptr;
  double tg_seconds = 0.0, tg_collective_wait_s = 0.0;
  for (int r = 0; r < o.reps; ++r) {
    if (o.prompt_len > 0) pp.push_back(time_prompt(engine, rng, o.depth, o.prompt_len));
    // tg: single-token decode steps at batch 1 after `depth` tokens of context (prefilled
    // first, untimed).
    if (o.gen_len > 0) {
      const std::string id =
          engine.add_request(contexts[static_cast<size_t>(r)], fixed_length(o.gen_len + 1));
      while (!has_first_token(engine.step(), id)) {
      }
      tg_stats_before = engine.stats();
      const double waited_before = tp ? tp->wait_seconds() : 0.0;
      const auto t0 = Clock::now();
      while (engine.has_unfinished_requests()) engine.step();
      tg_seconds += seconds_since(t0);
      tg.push_back(o.gen_len / seconds_since(t0));
      if (tp) tg_collective_wait_s += tp->wait_seconds() - waited_before;
      const SpecSummary run = spec_since(tg_stats_before, engine.stats());
      spec.drafts += run.drafts;
      spec.draft_tokens += run.draft_tokens;
      spec.accepted += run.accepted;
      // The probe right after each tg run: each ratio compares two figures a second apart.
      if (probe) {
        read_gbps.push_back(probe->measure());
        ratio.push_back(tg.back() * weight_gb / read_gbps.back());
      }
    }
    bar.update(static_cast<size_t>(r + 1), static_cast<size_t>(o.reps));
  }
  bar.finish();  // the results start on a line of their own
  const MeanStd p = mean_std(pp), t = mean_std(tg);
  if (o.json) {
    ordered_json j;
    j["model"] = o.engine.model;
    j["threads"] = o.engine.threads;
    j["prompt_len"] = o.prompt_len;
    j["gen_len"] = o.gen_len;
    j["depth"] = o.depth;
    j["reps"] = o.reps;
    j["pp_tokens_per_s"] = p.mean;
    j["pp_tokens_per_s_stddev"] = p.stddev;
    j["tg_tokens_per_s"] = t.mean;
    j["tg_tokens_per_s_stddev"] = t.stddev;
    j["weight_bytes"] = engine.weight_bytes();
    j["prefix_cache_hit_tokens"] = engine.stats().prefix_cache_hits;  // the depth, served
    if (!o.engine.speculative_config.empty()) add_spec_json(j, spec);
    if (tp && tg_seconds > 0) j["tg_collective_wait_share"] = tg_collective_wait_s / tg_seconds;
    if (probe) {
      j["read_gb_per_s"] = median(read_gbps);
      j["tg_weight_gb_per_s"] = median(tg) * weight_gb;
      j["tg_bandwidth_ratio"] = median(ratio);
    }
    std::cout << j.dump() << "\n";
  } else {
    // Padded by display columns: "±" is two bytes but one column.
    auto row = [](const std::string& test, const std::string& value) {
      const size_t columns = value.size() - (value.find("±") == std::string::npos ? 0 : 1);
      std::printf("| %-14s | %*s%s |\n", test.c_str(),
                  static_cast<int>(20 - std::min<size_t>(columns, 20)), "", value.c_str());
    };
    auto mean_sd = [](const MeanStd& s) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f ± %.2f", s.mean, s.stddev);
      return std::string(buf);
    };
    std::printf(
        "| test           |                  t/s |\n|----------------|----------------------|\n");
    const std::string at = o.depth > 0 ? " @ d" + std::to_string(o.depth) : "";
    if (o.prompt_len > 0) row("pp" + std::to_string(o.prompt_len) + at, mean_sd(p));
    if (o.gen_len > 0) row("tg" + std::to_string(o.gen_len) + at, mean_sd(t));
    if (!o.engine.speculative_config.empty() && o.gen_len > 0) print_spec(spec);
    if (probe && o.gen_len > 0) {
      std::printf(
          "tg reads %.3f GB of weights per token: %.1f GB/s, %.0f %% of the %.1f GB/s "
          "streaming read measured after each run (medians)\n",
          weight_gb, median(tg) * weight_gb, 100 * median(ratio), median(read_gbps));
    }
    if (tp && tg_seconds > 0) {
      std::printf("tg: rank 0 waited in collectives %.1f %% of the time (%.3f ms per token)\n",
                  100 * tg_collective_wait_s / tg_seconds,
                  1e3 * tg_collective_wait_s / (o.gen_len * static_cast<double>(tg.size())));
    }
  }
  return 0;
}

struct ThroughputOptions {
  EngineOptions engine;
  int num_prompts = 32;
  int input_len = 128;
  int output_len = 128;
  std::string structured;  // a JSON Schema file every request's output must follow
  BenchImageOptions images;
  bool json = false;
};

// The sampling of every throughput request: fixed length, and the schema when one was given
// (compiled once, before the clock starts).
SamplingParams throughput_params(const ThroughputOptions& o, Engine& engine) {
  SamplingParams p = fixed_length(o.output_len);
  if (o.structured.empty()) return p;
  p.structured_outputs = StructuredOutputs{};
  p.structured_outputs->json = read_flag_file(o.structured, "--structured");
  try {
    engine.check_structured_outputs(*p.structured_outputs);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("--structured " + o.structured + ": " + e.what());
  }
  return p;
}

int run_throughput(ThroughputOptions& o) {
  if (o.engine.max_model_len <= 0 && !o.images.enabled())
    o.engine.max_model_len = o.input_len + o.output_len;
  if (run_as_tensor_parallel_worker(o.engine)) return 0;
  const std::unique_ptr<Engine> opened = open_engine(o.engine, "bench");
  Engine& engine = *opened;
  std::mt19937 rng(2);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < o.num_prompts; ++i)
    prompts.push_back(random_prompt(rng, o.input_len, engine.vocab_size()));
  const SamplingParams params = throughput_params(o, engine);
  BenchImages images;
  if (o.images.enabled()) images = make_bench_images(engine, o.images, prompts, rng);
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (images.per_prompt.empty())
      engine.add_request(prompts[i], params);
    else
      engine.add_request(prompts[i], images.per_prompt[i], params);
  }
  ProgressBar bar("bench throughput");
  const EngineStats before = engine.stats();
  const auto t0 = Clock::now();
  int64_t out_tokens = 0;
  while (engine.has_unfinished_requests()) {
    for (const auto& out : engine.step()) {
      out_tokens += static_cast<int64_t>(out.new_token_ids.size());
      bar.update(static_cast<size_t>(out_tokens),
                 prompts.size() * static_cast<size_t>(o.output_len));
    }
  }
  const double secs = seconds_since(t0);
  bar.finish();
  const SpecSummary spec = spec_since(before, engine.stats());
  const EngineStats after = engine.stats();
  // Image requests count their image tokens as input, as usage.prompt_tokens does.
  const double in_tokens = static_cast<double>(o.num_prompts) * o.input_len +
                           static_cast<double>(images.num_image_tokens + 2 * images.num_images);
  const double encoder_s = after.encoder_seconds - before.encoder_seconds;
  const double req_s = o.num_prompts / secs;
  const double out_s = static_cast<double>(out_tokens) / secs;
  const double total_s = (in_tokens + static_cast<double>(out_tokens)) / secs;
  if (o.json) {
    ordered_json j;
    j["model"] = o.engine.model;
    j["num_prompts"] = o.num_prompts;
    j["input_len"] = o.input_len;
    j["output_len"] = o.output_len;
    j["max_num_seqs"] = o.engine.max_num_seqs;
    j["structured"] = o.structured.empty() ? ordered_json(nullptr) : ordered_json(o.structured);
    j["elapsed_s"] = secs;
    j["requests_per_s"] = req_s;
    j["input_tokens_per_s"] = in_tokens / secs;
    j["output_tokens_per_s"] = out_s;
    j["total_tokens_per_s"] = total_s;
    if (!o.engine.speculative_config.empty()) add_spec_json(j, spec);
    if (images.num_images > 0) {
      j["images"] = images.num_images;
      j["image_tokens"] = images.num_image_tokens;
      j["image_prepare_s"] = images.prepare_seconds;
      j["encoder_s"] = encoder_s;
      j["encoder_ms_per_image"] = 1e3 * encoder_s / static_cast<double>(images.num_images);
      j["image_tokens_per_s"] = static_cast<double>(images.num_image_tokens) / secs;
    }
    std::cout << j.dump() << "\n";
  } else {
    std::printf(
        "Throughput: %.2f requests/s, %.2f total tokens/s, %.2f output tokens/s (%.2f input "
        "tokens/s), %.1f s\n",
        req_s, total_s, out_s, in_tokens / secs, secs);
    if (!o.engine.speculative_config.empty()) print_spec(spec);
    if (images.num_images > 0) {
      std::printf(
          "Images: %lld (%lld image tokens), encoder %.1f ms per image (%.1f s of the run), "
          "%.2f image tokens/s; preprocessing %.1f ms per image (before the clock)\n",
          static_cast<long long>(images.num_images),
          static_cast<long long>(images.num_image_tokens),
          1e3 * encoder_s / static_cast<double>(images.num_images), encoder_s,
          static_cast<double>(images.num_image_tokens) / secs,
          1e3 * images.prepare_seconds / static_cast<double>(images.num_images));
    }
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Benchmarks: latency (pp/tg as llama-bench), throughput (as vllm bench throughput) and "
      "serve (a running server under load, as vllm bench serve) and structured (grammar token "
      "masks, as MaskBench)");
  bench->require_subcommand(1);

  LatencyOptions latency_defaults;
  latency_defaults.engine.max_num_seqs =
      1;  // batch 1: the pool holds one sequence, as llama-bench's
  auto [l, lat] = add_subcommand<LatencyOptions>(
      *bench, "latency",
      "Prompt processing (one prompt, empty cache) and generation (batch 1) tokens/s, mean ± "
      "stddev over repetitions",
      exit_code, run_latency, latency_defaults);
  add_engine_flags(l, lat->engine);
  l->add_option("-p,--prompt-len", lat->prompt_len, "Prompt tokens for pp")->capture_default_str();
  l->add_option("-n,--gen-len", lat->gen_len, "Generated tokens for tg")->capture_default_str();
  l->add_option("-d,--depth", lat->depth,
                "Tokens of context already there before pp and tg run (as llama-bench -d): "
                "pp's context comes from the prefix cache, tg's is prefilled untimed")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  l->add_option("-r,--reps", lat->reps, "Repetitions")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  l->add_flag("!--no-warmup", lat->warmup,
              "Skip the untimed warm-up run (one prompt and 4 decode steps) before the reps");
  l->add_flag("--json", lat->json, "Print one JSON object (pp_tokens_per_s, tg_tokens_per_s, ...)");
  l->add_flag("--bandwidth", lat->bandwidth,
              "After each tg run, measure streaming-read bandwidth (512 MiB) and report tg's "
              "weight traffic as a fraction of it (read_gb_per_s, tg_bandwidth_ratio)");

  auto [t, thr] = add_subcommand<ThroughputOptions>(
      *bench, "throughput",
      "Offline throughput of N random distinct prompts through continuous batching (EOS ignored)",
      exit_code, run_throughput);
  add_engine_flags(t, thr->engine);
  t->add_option("--num-prompts", thr->num_prompts, "Requests")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--input-len", thr->input_len, "Prompt tokens per request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--output-len", thr->output_len, "Generated tokens per request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--image-size", thr->images.size,
                "Give every prompt random images of WxH pixels (e.g. 448x448; a vision-language "
                "model), placed before its text");
  t->add_option("--images-per-prompt", thr->images.per_prompt,
                "Images per prompt with --image-size (default 1)")
      ->check(CLI::Range(1, 64));
  t->add_option("--structured", thr->structured,
                "A JSON Schema file: every request's output must follow it (structured outputs; "
                "compare with the same run without it)")
      ->check(CLI::ExistingFile);
  t->add_flag(
      "--json", thr->json,
      "Print one JSON object (requests_per_s, output_tokens_per_s, total_tokens_per_s, ...)");
  add_bench_serve_subcommand(bench, exit_code);
  add_bench_structured_subcommand(bench, exit_code);
}

}  // namespace pagedllm::cli
