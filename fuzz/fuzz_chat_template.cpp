// libFuzzer target: chat templates come from model files, so any bytes must parse or fail with
// TemplateError, and a template that parses must render or fail the same way.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm;
  try {
    const ChatTemplate tmpl(std::string(reinterpret_cast<const char*>(data), size));
    ChatTemplateInputs in;
    in.messages = nlohmann::ordered_json::parse(
        R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello", "tool_calls": [{"type": "function",
             "function": {"name": "f", "arguments": {"a": 1}}}]}, {"role": "user", "content": "x"}])");
    in.tools =
        nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
    in.add_generation_prompt = true;
    in.bos_token = "<s>";
    in.date = "2026-01-02";
    (void)tmpl.render(in);
  } catch (const TemplateError&) {
  }
  return 0;
}
