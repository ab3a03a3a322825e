#include "server/chat_output.h"

#include <mutex>
#include <random>

namespace pagedllm::server {

using json = nlohmann::ordered_json;

std::string tool_call_id() {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static std::mutex mutex;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard lock(mutex);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

json ChatOutput::calls_json(const std::vector<ConstrainedToolCall>& calls) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    out.push_back({{"id", tool_call_id()},
                   {"type", "function"},
                   {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
  }
  return out;
}

json ChatOutput::message(const std::string& text) {
  text_ = text;
  if (constrained_call()) {
    const auto calls = constrained_tool_calls(choice_, text);
    if (!calls.empty())
      return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls_json(calls)}};
  }
  return {{"role", "assistant"}, {"content", text}};
}

json ChatOutput::feed(const std::string& text) {
  text_ += text;
  if (!constrained_call()) return text.empty() ? json::object() : json{{"content", text}};
  if (choice_.mode == ToolChoice::Mode::kRequired) return json::object();  // sent whole at the end
  // A named function: its arguments are the output itself, streamed as they come.
  json call = {{"index", 0}};
  if (!sent_call_head_) {
    call["id"] = tool_call_id();
    call["type"] = "function";
    call["function"] = {{"name", choice_.name}, {"arguments", text}};
    sent_call_head_ = made_calls_ = true;
  } else {
    if (text.empty()) return json::object();
    call["function"] = {{"arguments", text}};
  }
  return {{"tool_calls", json::array({std::move(call)})}};
}

json ChatOutput::finish() {
  if (choice_.mode != ToolChoice::Mode::kRequired) return json::object();
  const auto calls = constrained_tool_calls(choice_, text_);
  if (calls.empty()) return text_.empty() ? json::object() : json{{"content", text_}};
  made_calls_ = true;
  json deltas = calls_json(calls);
  for (size_t i = 0; i < deltas.size(); ++i) {
    json indexed = {{"index", i}};
    indexed.update(deltas[i]);
    deltas[i] = std::move(indexed);
  }
  return {{"tool_calls", std::move(deltas)}};
}

std::string ChatOutput::finish_reason(const std::string& engine_reason) const {
  if (choice_.mode != ToolChoice::Mode::kRequired || engine_reason != "stop") return engine_reason;
  return !constrained_tool_calls(choice_, text_).empty() || made_calls_ ? "tool_calls"
                                                                        : engine_reason;
}

}  // namespace pagedllm::server
