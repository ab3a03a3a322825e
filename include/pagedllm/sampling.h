// Public sampling types: what a request asks of the sampler and what it gets back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagedllm {

// A constraint on the shape of the output, as vLLM's StructuredOutputsParams: exactly one of
// json (a JSON Schema, as text), regex, choice, grammar (llama.cpp's GBNF) or json_object (any
// JSON object). Only tokens that keep the output a prefix of the language can be sampled, and
// EOS only where it is complete (docs/STRUCTURED.md).
struct StructuredOutputs {
  std::optional<std::string> json;
  std::optional<std::string> regex;
  std::optional<std::vector<std::string>> choice;
  std::optional<std::string> grammar;
  bool json_object = false;
  // JSON without whitespace between tokens (vLLM's disable_any_whitespace).
  bool disable_any_whitespace = false;
  // additionalProperties false unless the schema says otherwise (vLLM's
  // disable_additional_properties); the specification's default is true.
  bool disable_additional_properties = false;
  // The constraint starts once the output holds these tokens (a reasoning model's end of
  // thinking, e.g. the ids of "</think>"), and applies to what follows; empty: from the start.
  std::vector<int32_t> start_after;
};

// Per-request generation settings, with vLLM's names and defaults.
struct SamplingParams {
  int max_tokens = 16;
  int min_tokens = 0;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;

  // 0 temperature is greedy; top_k 0 (or -1) and top_p 1 disable those filters.
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;
  float min_p = 0.0f;
  std::optional<uint64_t> seed;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  // Number of top log-probabilities to return per token; nullopt returns none.
  std::optional<int> logprobs;
  // Constrained decoding; nullopt: free text.
  std::optional<StructuredOutputs> structured_outputs;
};

struct TokenLogprob {
  int32_t token_id = 0;
  float logprob = 0.0f;
};

struct SampledToken {
  int32_t token_id = 0;
  float logprob = 0.0f;                    // of token_id, before penalties and temperature
  std::vector<TokenLogprob> top_logprobs;  // the n best, when logprobs = n was asked for
};

}  // namespace pagedllm
