// The request bodies of /v1/completions and /v1/chat/completions, parsed and checked.
//
// Parsing checks types and ranges only; checks that need the model (token ids inside the
// vocabulary, prompt + max_tokens within max_model_len) happen once the prompt is tokenized.
// Every failure is an ApiError(400) naming the field in `param`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagedllm/engine.h"
#include "pagedllm/sampling.h"
#include "server/tool_choice.h"

namespace pagedllm::server {

// A prompt as text or as token ids.
using Prompt = std::variant<std::string, std::vector<int32_t>>;

// What completions and chat share: sampling, stops, n, streaming.
struct GenerationRequest {
  std::string model;  // empty: the served model
  SamplingParams params;
  bool max_tokens_given = false;  // absent: up to max_model_len
  std::vector<std::string> stop;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  int n = 1;
  int best_of = 1;  // the best n of best_of by cumulative logprob
  bool stream = false;
  bool include_usage = false;       // stream_options.include_usage
  std::optional<int> top_logprobs;  // per-token alternatives asked for; nullopt: no logprobs
  // The field params.structured_outputs came from (response_format, structured_outputs,
  // guided_json...), for an error its grammar gives when compiled.
  std::string structured_param;
  std::vector<std::string> ignored;  // unknown fields, for a warning in the log
};

struct CompletionRequest : GenerationRequest {
  std::vector<Prompt> prompts;
  bool echo = false;
  bool add_special_tokens = true;
};

struct ChatRequest : GenerationRequest {
  // Array of {role, content, ...}: text-only content flattened to a string; content with images
  // a list of {"type": "text", "text"} and {"type": "image"} parts.
  nlohmann::ordered_json messages;
  std::vector<std::string> image_urls;  // the image_url parts' URLs, in the messages' order
  ImageOptions image_options;           // mm_processor_kwargs
  nlohmann::ordered_json tools;         // null when absent
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  nlohmann::ordered_json template_kwargs;  // chat_template_kwargs: extra variables for the template
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  bool add_special_tokens = false;  // the template writes BOS itself
};

struct TokenizeRequest {
  std::string model;
  std::optional<std::string> prompt;
  nlohmann::ordered_json messages;  // set instead of prompt for chat input
  bool add_generation_prompt = true;
  bool add_special_tokens = true;
  bool return_token_strs = false;
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

// Throws ApiError(400) for malformed JSON or a body that is not an object.
nlohmann::ordered_json parse_json_body(const std::string& body);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body);
ChatRequest parse_chat_request(const nlohmann::ordered_json& body);
TokenizeRequest parse_tokenize_request(const nlohmann::ordered_json& body);
DetokenizeRequest parse_detokenize_request(const nlohmann::ordered_json& body);

}  // namespace pagedllm::server
