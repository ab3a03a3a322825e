#include "server/chat_output.h"

namespace pagedllm::server {

using json = nlohmann::ordered_json;

namespace {

// Both deltas' fields in one: text appended, tool calls listed in order.
json merged(json a, const json& b) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!a.contains(it.key())) {
      a[it.key()] = it.value();
    } else if (it.value().is_string()) {
      a[it.key()] = a[it.key()].get<std::string>() + it.value().get<std::string>();
    } else if (it.value().is_array()) {
      for (const json& v : it.value()) a[it.key()].push_back(v);
    }
  }
  return a;
}

// vLLM's name for the field, and the older one some clients still read.
void add_reasoning(json& j, const std::string& reasoning) {
  if (reasoning.empty()) return;
  j["reasoning"] = reasoning;
  j["reasoning_content"] = reasoning;
}

}  // namespace

ChatOutput::ChatOutput(const ChatOutputOptions& options) : options_(options) {
  if (!options_.reasoning_parser.empty()) {
    reasoning_ = make_reasoning_parser(options_.reasoning_parser, {options_.thinking_enabled});
  }
  if (options_.tool_choice.mode == ToolChoice::Mode::kAuto && !options_.tool_call_parser.empty())
    tool_parser_ = make_tool_call_parser(options_.tool_call_parser, options_.tools);
}

json ChatOutput::calls_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const ToolCall& c : calls) {
    out.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

json ChatOutput::deltas_json(const std::vector<ToolCallDelta>& deltas) {
  json out = json::array();
  for (const ToolCallDelta& d : deltas) {
    json call = {{"index", d.index}};
    if (!d.id.empty()) {
      call["id"] = d.id;
      call["type"] = "function";
      call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
    } else {
      call["function"] = {{"arguments", d.arguments}};
    }
    out.push_back(std::move(call));
  }
  if (!out.empty()) made_calls_ = true;
  return out;
}

json ChatOutput::message(const std::string& text) {
  const ReasoningDelta split = reasoning_ ? reasoning_->parse(text) : ReasoningDelta{"", text};
  content_ = split.content;
  json message = {{"role", "assistant"}, {"content", content_}};
  add_reasoning(message, split.reasoning);
  json calls = json::array();
  if (constrained_call()) {
    calls = calls_json(constrained_tool_calls(options_.tool_choice, content_));
    if (!calls.empty()) message["content"] = nullptr;
  } else if (tool_parser_) {
    ToolParseResult parsed = tool_parser_->parse(content_);
    calls = calls_json(parsed.tool_calls);
    message["content"] = calls.empty() || !parsed.content.empty() ? json(parsed.content) : json();
  }
  if (!calls.empty()) {
    made_calls_ = true;
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

json ChatOutput::feed(const std::string& text, bool last) {
  json delta = json::object();
  if (reasoning_) {
    const ReasoningDelta split = reasoning_->feed(text);
    add_reasoning(delta, split.reasoning);
    delta = merged(std::move(delta), content_delta(split.content));
  } else {
    delta = content_delta(text);
  }
  return last ? merged(std::move(delta), finish()) : delta;
}

json ChatOutput::finish() {
  json delta = json::object();
  if (reasoning_) {
    const ReasoningDelta split = reasoning_->finish();
    add_reasoning(delta, split.reasoning);
    delta = merged(std::move(delta), content_delta(split.content));
  }
  return merged(std::move(delta), content_end());
}

json ChatOutput::content_delta(const std::string& content) {
  content_ += content;
  if (tool_parser_) {
    ToolStreamDelta d = tool_parser_->feed(content);
    json delta = d.content.empty() ? json::object() : json{{"content", d.content}};
    if (json calls = deltas_json(d.tool_calls); !calls.empty()) delta["tool_calls"] = calls;
    return delta;
  }
  if (!constrained_call()) return content.empty() ? json::object() : json{{"content", content}};
  if (options_.tool_choice.mode == ToolChoice::Mode::kRequired)
    return json::object();  // sent whole at the end
  // A named function: its arguments are the output itself, streamed as they come.
  if (content.empty()) return json::object();
  json call = {{"index", 0}};
  if (!sent_call_head_) {
    call["id"] = random_tool_call_id();
    call["type"] = "function";
    call["function"] = {{"name", options_.tool_choice.name}, {"arguments", content}};
    sent_call_head_ = made_calls_ = true;
  } else {
    call["function"] = {{"arguments", content}};
  }
  return {{"tool_calls", json::array({std::move(call)})}};
}

json ChatOutput::content_end() {
  if (tool_parser_) {
    ToolStreamDelta d = tool_parser_->finish();
    json delta = d.content.empty() ? json::object() : json{{"content", d.content}};
    if (json calls = deltas_json(d.tool_calls); !calls.empty()) delta["tool_calls"] = calls;
    return delta;
  }
  if (options_.tool_choice.mode != ToolChoice::Mode::kRequired) return json::object();
  const auto calls = constrained_tool_calls(options_.tool_choice, content_);
  if (calls.empty()) return content_.empty() ? json::object() : json{{"content", content_}};
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
  if (engine_reason != "stop" || options_.tool_choice.mode == ToolChoice::Mode::kNamed)
    return engine_reason;
  return made_calls_ ? "tool_calls" : engine_reason;
}

}  // namespace pagedllm::server
