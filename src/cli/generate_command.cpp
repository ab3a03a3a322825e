#include "cli/generate_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/engine_flags.h"
#include "cli/image_prompt.h"
#include "cli/subcommand.h"

namespace pagedllm::cli {

namespace {

using ordered_json = nlohmann::ordered_json;

struct GenerateOptions {
  EngineOptions engine;
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::string prompts_file;
  std::vector<std::string> images;  // --image FILE, in order, before the prompt's text
  SamplingParams params;
  std::optional<uint64_t> seed;
  std::optional<int> logprobs;
  bool json = false;
  // Structured outputs, with llama.cpp's flag names where it has them.
  std::string json_schema, json_schema_file, grammar, grammar_file, regex;
};

// At most one constraint, compiled before any prompt runs: a bad one is one line and exit 1.
void apply_structured_flags(const GenerateOptions& o, Engine& engine, SamplingParams& p) {
  StructuredOutputs s;
  int given = 0;
  auto take = [&given](std::optional<std::string>& field, std::string text) {
    field = std::move(text);
    ++given;
  };
  if (!o.json_schema.empty()) take(s.json, o.json_schema);
  if (!o.json_schema_file.empty())
    take(s.json, read_flag_file(o.json_schema_file, "--json-schema-file"));
  if (!o.grammar.empty()) take(s.grammar, o.grammar);
  if (!o.grammar_file.empty()) take(s.grammar, read_flag_file(o.grammar_file, "--grammar-file"));
  if (!o.regex.empty()) take(s.regex, o.regex);
  if (given == 0) return;
  if (given > 1)
    throw std::runtime_error(
        "give only one of --json-schema, --json-schema-file, --grammar, --grammar-file, --regex");
  try {
    engine.check_structured_outputs(s);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("structured output: ") + e.what());
  }
  p.structured_outputs = std::move(s);
}

// A prompt from the JSONL file: {"prompt": "..."} or {"prompt_token_ids": [...]}.
std::vector<std::vector<int32_t>> read_prompts_file(const std::string& path, const Engine& engine) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open prompts file '" + path + "'");
  std::vector<std::vector<int32_t>> prompts;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto doc = nlohmann::json::parse(line, nullptr, false);
    const std::string where = path + ":" + std::to_string(n) + ": ";
    if (doc.is_discarded() || !doc.is_object())
      throw std::runtime_error(where + "not a JSON object");
    if (doc.contains("prompt_token_ids") && doc["prompt_token_ids"].is_array()) {
      std::vector<int32_t> ids;
      for (const auto& t : doc["prompt_token_ids"]) {
        if (!t.is_number_integer())
          throw std::runtime_error(where + "prompt_token_ids must be integers");
        ids.push_back(t.get<int32_t>());
      }
      prompts.push_back(std::move(ids));
    } else if (doc.contains("prompt") && doc["prompt"].is_string()) {
      prompts.push_back(engine.encode(doc["prompt"].get<std::string>()));
    } else {
      throw std::runtime_error(where + "needs \"prompt\" (string) or \"prompt_token_ids\" (array)");
    }
  }
  return prompts;
}

ordered_json to_json(const RequestOutput& out, bool with_logprobs) {
  ordered_json j;
  j["prompt_token_ids"] = out.prompt_token_ids;
  j["token_ids"] = out.token_ids;
  j["text"] = out.text;
  j["finish_reason"] = out.finish_reason;
  if (with_logprobs) {
    ordered_json lps = ordered_json::array();
    for (const auto& s : out.logprobs) {
      ordered_json top = ordered_json::array();
      for (const auto& t : s.top_logprobs)
        top.push_back({{"token_id", t.token_id}, {"logprob", t.logprob}});
      lps.push_back({{"token_id", s.token_id}, {"logprob", s.logprob}, {"top_logprobs", top}});
    }
    j["logprobs"] = lps;
  }
  return j;
}

// What speculation did, on stderr, as vLLM's SpecDecoding metrics log line.
void log_speculation(const Engine& engine, const EngineOptions& options) {
  if (options.speculative_config.empty()) return;
  const EngineStats s = engine.stats();
  const double rate = s.spec_num_draft_tokens > 0
                          ? static_cast<double>(s.spec_num_accepted_tokens) /
                                static_cast<double>(s.spec_num_draft_tokens)
                          : 0.0;
  const double length = s.spec_num_drafts > 0
                            ? 1.0 + static_cast<double>(s.spec_num_accepted_tokens) /
                                        static_cast<double>(s.spec_num_drafts)
                            : 1.0;
  std::fprintf(stderr,
               "pagedllm: speculative decoding: %lld drafts, %lld draft tokens, %lld accepted "
               "(%.1f %%), mean acceptance length %.2f\n",
               static_cast<long long>(s.spec_num_drafts),
               static_cast<long long>(s.spec_num_draft_tokens),
               static_cast<long long>(s.spec_num_accepted_tokens), 100 * rate, length);
}

// The prompt's time to the first token, and the decode rate of the tokens after it, on stderr.
void log_timing(size_t prompt_tokens, std::chrono::duration<double> prompt_time, size_t tokens,
                std::chrono::duration<double> decode_time) {
  std::fprintf(stderr, "pagedllm: prompt %zu tokens, first token after %.1f ms", prompt_tokens,
               1e3 * prompt_time.count());
  if (tokens > 1 && decode_time.count() > 0) {
    std::fprintf(stderr, "; decoded %zu more tokens in %.3f s, %.1f tokens/s", tokens - 1,
                 decode_time.count(), static_cast<double>(tokens - 1) / decode_time.count());
  }
  std::fprintf(stderr, "\n");
}

// One prompt with images: its text streamed, or its output as one JSON line.
int run_with_images(const GenerateOptions& o, Engine& engine) {
  ImagePrompt prompt = build_image_prompt(engine, o.prompt, o.images);
  engine.add_request(std::move(prompt.token_ids), std::move(prompt.images), o.params);
  RequestOutput last;
  while (engine.has_unfinished_requests()) {
    for (auto& out : engine.step()) {
      if (!o.json) std::cout << out.new_text << std::flush;
      last = std::move(out);
    }
  }
  if (o.json) {
    std::cout << to_json(last, o.logprobs.has_value())
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::cout << "\n";
  return 0;
}

int run_generate(GenerateOptions& o) {
  const int sources = !o.prompt.empty() + !o.prompt_ids.empty() + !o.prompts_file.empty();
  if (sources > 1)
    throw std::runtime_error("give only one of --prompt, --prompt-ids, --prompts-file");
  if (!o.images.empty() && (!o.prompt_ids.empty() || !o.prompts_file.empty()))
    throw std::runtime_error(
        "--image goes with --prompt (text), not --prompt-ids or --prompts-file");
  if (run_as_tensor_parallel_worker(o.engine)) return 0;
  const std::unique_ptr<Engine> opened = open_engine(o.engine);
  Engine& engine = *opened;
  o.params.seed = o.seed;
  o.params.logprobs = o.logprobs;
  apply_structured_flags(o, engine, o.params);
  if (!o.images.empty()) return run_with_images(o, engine);

  std::vector<std::vector<int32_t>> prompts;
  if (!o.prompts_file.empty()) {
    prompts = read_prompts_file(o.prompts_file, engine);
  } else if (!o.prompt_ids.empty()) {
    prompts.push_back(o.prompt_ids);
  } else {
    prompts.push_back(engine.encode(o.prompt));  // an empty prompt is BOS alone
  }
  if (prompts.size() == 1 && !o.json) {
    // Stream one prompt's text as it is decoded, timing the prompt (to the first token) and
    // the decode after it, as llama.cpp's tools report them.
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    std::optional<Clock::time_point> first;
    size_t tokens = 0;
    engine.add_request(prompts[0], o.params);
    while (engine.has_unfinished_requests()) {
      for (const auto& out : engine.step()) {
        std::cout << out.new_text << std::flush;
        if (!first && !out.token_ids.empty()) first = Clock::now();
        tokens = out.token_ids.size();
      }
    }
    const auto end = Clock::now();
    std::cout << "\n";
    log_speculation(engine, o.engine);
    if (first) log_timing(prompts[0].size(), *first - start, tokens, end - *first);
    return 0;
  }
  const auto outputs = engine.generate(prompts, o.params);
  for (const auto& out : outputs) {
    if (o.json) {
      // Text cut mid-character (byte tokens) prints U+FFFD rather than failing the run.
      std::cout << to_json(out, o.logprobs.has_value())
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      std::cout << out.text << "\n";
    }
  }
  log_speculation(engine, o.engine);
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, int& exit_code) {
  auto [cmd, o] = add_subcommand<GenerateOptions>(
      app, "generate",
      "Generate text offline: one prompt streamed to stdout, or a file of prompts run "
      "together through continuous batching (logs go to stderr)",
      exit_code, run_generate);
  add_engine_flags(cmd, o->engine);
  cmd->add_option("--prompt", o->prompt, "Prompt text (BOS is added); default: BOS alone");
  cmd->add_option("--prompt-ids", o->prompt_ids, "Prompt as token ids, e.g. 1,403,407")
      ->delimiter(',');
  cmd->add_option("--image", o->images,
                  "Image file (PNG, JPEG, WebP, GIF) for a vision model, repeatable: the chat "
                  "template gets one user message of the images then --prompt (no template: "
                  "the image placeholders before the text)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--prompts-file", o->prompts_file,
                  "JSONL file of {\"prompt\": ...} or {\"prompt_token_ids\": [...]} lines")
      ->check(CLI::ExistingFile);
  auto& p = o->params;
  cmd->add_option("--max-tokens", p.max_tokens, "Most tokens to generate per prompt")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--min-tokens", p.min_tokens, "Tokens to generate before EOS may stop")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--temperature", p.temperature, "Sampling temperature; 0 is greedy")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-p", p.top_p, "Nucleus sampling: keep the smallest set of this mass")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--top-k", p.top_k, "Keep the k most likely tokens; 0 keeps all")
      ->capture_default_str();
  cmd->add_option("--min-p", p.min_p, "Drop tokens below this fraction of the best's probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", o->seed, "Sampling seed: the same seed gives the same tokens");
  cmd->add_option("--presence-penalty", p.presence_penalty, "Penalty for tokens already generated");
  cmd->add_option("--frequency-penalty", p.frequency_penalty,
                  "Penalty per occurrence of a generated token");
  cmd->add_option("--repetition-penalty", p.repetition_penalty,
                  "Divides (or multiplies) logits of tokens seen in prompt or output")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--stop-token-ids", p.stop_token_ids, "Token ids that end generation")
      ->delimiter(',');
  cmd->add_flag("--ignore-eos", p.ignore_eos, "Keep generating past EOS");
  cmd->add_option("--json-schema", o->json_schema,
                  "Constrain the output to JSON following this JSON Schema (text)");
  cmd->add_option("--json-schema-file", o->json_schema_file,
                  "Constrain the output to JSON following the JSON Schema in this file");
  cmd->add_option("--grammar", o->grammar,
                  "Constrain the output to this GBNF grammar (llama.cpp's syntax; rule root)");
  cmd->add_option("--grammar-file", o->grammar_file,
                  "Constrain the output to the GBNF grammar in this file");
  cmd->add_option("--regex", o->regex, "Constrain the output to this regular expression");
  cmd->add_option("--logprobs", o->logprobs,
                  "Return the sampled token's log-probability and the top N (with --json)")
      ->check(CLI::Range(0, 20));
  cmd->add_flag("--json", o->json,
                "Print one JSON object per prompt, in input order: prompt_token_ids, token_ids, "
                "text, finish_reason[, logprobs]");
}

}  // namespace pagedllm::cli
