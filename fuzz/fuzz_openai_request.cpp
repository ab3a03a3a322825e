// libFuzzer: request bodies of every endpoint through JSON parsing and validation. Any input
// must either parse or raise ApiError(400); nothing else may escape.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/api_error.h"
#include "server/openai_request.h"

using namespace pagedllm::server;

template <typename Parse>
void check(const std::string& body, Parse&& parse) {
  try {
    parse(parse_json_body(body));
  } catch (const ApiError& e) {
    if (e.status() != 400) std::abort();
    (void)error_json(e).dump();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  check(body, [](const auto& j) {
    const CompletionRequest r = parse_completion_request(j);
    if (r.prompts.empty() || r.n < 1 || r.best_of < r.n) std::abort();
  });
  check(body, [](const auto& j) {
    const ChatRequest r = parse_chat_request(j);
    if (!r.messages.is_array() || r.messages.empty()) std::abort();
  });
  check(body, [](const auto& j) { parse_tokenize_request(j); });
  check(body, [](const auto& j) { parse_detokenize_request(j); });
  return 0;
}
