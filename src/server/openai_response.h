// JSON bodies of OpenAI responses and stream chunks. Text may hold partial UTF-8 only inside
// per-token logprob strings; dump() with replacement keeps every body valid JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/choice_stream.h"

namespace pagedllm::server {

using ojson = nlohmann::ordered_json;

// Serializes with invalid UTF-8 replaced by U+FFFD.
std::string to_body(const ojson& j);
// One Server-Sent Event: "data: <json>\n\n".
std::string sse_event(const ojson& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

ojson usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// /v1/completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset}. `offset` is the
// text offset of the first entry; it advances by each token's text.
ojson completion_logprobs_json(const std::vector<LogprobEntry>& entries, size_t& offset);
// /v1/chat/completions logprobs: {"content": [{token, logprob, bytes, top_logprobs}]}.
ojson chat_logprobs_json(const std::vector<LogprobEntry>& entries);

// The envelope shared by responses and chunks: id, object, created, model.
ojson envelope(const std::string& id, const char* object, int64_t created,
               const std::string& model);

}  // namespace pagedllm::server
