// One chat choice's text as the client sees it: plain content, or tool calls when the request
// made the model call a function (tool_choice "required" or a named function, decoded under a
// grammar). Non-streamed it becomes the message; streamed, each text delta becomes the delta
// OpenAI's clients expect (id and name first, then argument fragments).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/tool_choice.h"

namespace pagedllm::server {

// OpenAI's call id shape: "call_" and 24 letters and digits.
std::string tool_call_id();

class ChatOutput {
 public:
  explicit ChatOutput(const ToolChoice& choice) : choice_(choice) {}

  // The assistant message of a finished choice (not streamed).
  nlohmann::ordered_json message(const std::string& text);
  // What the delta of this text adds; an empty object when nothing is to be sent yet.
  nlohmann::ordered_json feed(const std::string& text);
  // What is held back, at the end of the choice.
  nlohmann::ordered_json finish();
  // The finish reason to report for the engine's: "tool_calls" where the model called (as
  // OpenAI answers for "required"; a named function gives "stop").
  std::string finish_reason(const std::string& engine_reason) const;

 private:
  bool constrained_call() const {
    return choice_.mode == ToolChoice::Mode::kRequired || choice_.mode == ToolChoice::Mode::kNamed;
  }
  static nlohmann::ordered_json calls_json(const std::vector<ConstrainedToolCall>& calls);

  ToolChoice choice_;
  std::string text_;  // all of it so far
  bool sent_call_head_ = false;
  bool made_calls_ = false;
};

}  // namespace pagedllm::server
