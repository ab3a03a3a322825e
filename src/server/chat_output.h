// One chat choice's text as the client sees it: the reasoning (--reasoning-parser), then
// content or tool calls. Calls come from a grammar the request forced (tool_choice "required"
// or a named function) or, with auto tool choice, from what the model wrote, read by the
// --tool-call-parser. Non-streamed it becomes the message; streamed, each text delta becomes
// the delta OpenAI's clients expect (a call's id and name first, then its arguments).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"
#include "server/tool_choice.h"

namespace pagedllm::server {

struct ChatOutputOptions {
  ToolChoice tool_choice;
  nlohmann::ordered_json tools;  // the request's
  std::string tool_call_parser;  // set: tool_choice "auto" reads calls from the text
  std::string reasoning_parser;  // set: <think>...</think> goes to "reasoning"
  bool thinking_enabled = true;  // chat_template_kwargs.enable_thinking
};

class ChatOutput {
 public:
  explicit ChatOutput(const ChatOutputOptions& options);

  // The assistant message of a finished choice (not streamed).
  nlohmann::ordered_json message(const std::string& text);
  // What the delta of this text adds (and, when it is the last, what was held back); an empty
  // object when nothing is to be sent yet.
  nlohmann::ordered_json feed(const std::string& text, bool last = false);
  // The finish reason to report for the engine's: "tool_calls" where the model called, as
  // OpenAI answers (a named function gives "stop").
  std::string finish_reason(const std::string& engine_reason) const;

 private:
  bool constrained_call() const {
    const auto mode = options_.tool_choice.mode;
    return mode == ToolChoice::Mode::kRequired || mode == ToolChoice::Mode::kNamed;
  }
  nlohmann::ordered_json finish();
  nlohmann::ordered_json content_delta(const std::string& content);
  nlohmann::ordered_json content_end();
  nlohmann::ordered_json calls_json(const std::vector<ToolCall>& calls);
  nlohmann::ordered_json deltas_json(const std::vector<ToolCallDelta>& deltas);

  ChatOutputOptions options_;
  std::unique_ptr<ReasoningParser> reasoning_;
  std::unique_ptr<ToolCallParser> tool_parser_;  // auto tool choice only
  std::string content_;                          // the content so far, reasoning excluded
  bool sent_call_head_ = false;
  bool made_calls_ = false;
};

}  // namespace pagedllm::server
