#include "server/openai_response.h"

#include <cmath>

namespace pagedllm::server {

std::string to_body(const ojson& j) {
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string sse_event(const ojson& j) {
  return "data: " + to_body(j) + "\n\n";
}

ojson usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"completion_tokens", completion_tokens}};
}

namespace {

// A logprob as JSON: -inf (a token the sampler could never pick) becomes a large negative
// number, since JSON has no infinity.
ojson logprob_value(float lp) {
  return std::isfinite(lp) ? ojson(lp) : ojson(-9999.0);
}

// The string as valid UTF-8 (U+FFFD for a partial character), as the key of a JSON object.
std::string valid_text(const std::string& s) {
  const std::string quoted = ojson(s).dump(-1, ' ', false, ojson::error_handler_t::replace);
  return ojson::parse(quoted).get<std::string>();
}

ojson bytes_json(const std::string& s) {
  ojson bytes = ojson::array();
  for (unsigned char c : s) bytes.push_back(c);
  return bytes;
}

}  // namespace

ojson completion_logprobs_json(const std::vector<LogprobEntry>& entries, size_t& offset) {
  ojson tokens = ojson::array(), token_logprobs = ojson::array(), top = ojson::array(),
        offsets = ojson::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(valid_text(e.sampled.text));
    token_logprobs.push_back(logprob_value(e.sampled.logprob));
    ojson alternatives = ojson::object();
    for (const TokenAlternative& t : e.top) {
      const std::string key = valid_text(t.text);
      if (!alternatives.contains(key)) alternatives[key] = logprob_value(t.logprob);
    }
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    offset += e.sampled.text.size();
  }
  return {{"text_offset", offsets},
          {"token_logprobs", token_logprobs},
          {"tokens", tokens},
          {"top_logprobs", top}};
}

ojson chat_logprobs_json(const std::vector<LogprobEntry>& entries) {
  ojson content = ojson::array();
  for (const LogprobEntry& e : entries) {
    ojson top = ojson::array();
    for (const TokenAlternative& t : e.top) {
      top.push_back({{"token", valid_text(t.text)},
                     {"logprob", logprob_value(t.logprob)},
                     {"bytes", bytes_json(t.text)}});
    }
    content.push_back({{"token", valid_text(e.sampled.text)},
                       {"logprob", logprob_value(e.sampled.logprob)},
                       {"bytes", bytes_json(e.sampled.text)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

ojson envelope(const std::string& id, const char* object, int64_t created,
               const std::string& model) {
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model}};
}

}  // namespace pagedllm::server
