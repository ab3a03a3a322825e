// Reasoning parsers: split a model's <think>...</think> reasoning from its answer, as vLLM's
// `--reasoning-parser` does (qwen3, deepseek_r1). docs/TOOLS.md describes the rules.
//
//   deepseek_r1: everything before </think> is reasoning, even without <think> (the chat
//                template opens it); an output that never closes it is all reasoning.
//   qwen3:       the same while thinking is enabled (the default), and a <tool_call> that is
//                followed by <function=...> also ends the reasoning (Qwen3.5 calls tools from
//                inside it). With thinking disabled (chat_template_kwargs enable_thinking=false)
//                the output is content unless it opens with <think>.
//
// Streaming holds back text that may be the start of a tag, so the concatenated stream always
// equals parse() of the whole text, however it was split.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::server {

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

struct ReasoningParserOptions {
  bool thinking_enabled = true;  // qwen3: false when the request disabled thinking
};

class ReasoningParser {
 public:
  struct Rules {
    bool reasoning_without_open_tag = true;  // text before any tag is reasoning
    bool tool_call_ends_reasoning = false;   // <tool_call><function=... ends it too
  };

  explicit ReasoningParser(Rules rules) : rules_(rules) {}

  // The whole output at once; independent of any stream fed to this parser.
  ReasoningDelta parse(std::string_view full_text) const;
  ReasoningDelta feed(std::string_view text_delta);
  ReasoningDelta finish();
  // True once the reasoning is over: later text is content (tool calls are parsed from it).
  bool reasoning_ended() const { return state_ == State::kContent; }

 private:
  enum class State { kStart, kReasoning, kContent };

  bool step(bool at_end, ReasoningDelta& out);
  bool step_start(bool at_end);
  bool step_reasoning(bool at_end, ReasoningDelta& out);
  // How the text at pending_[pos] ends the reasoning, if it does.
  enum class Tag { kNone, kOpen, kClose, kToolCall, kUndecided };
  Tag tag_at(size_t pos) const;

  Rules rules_;
  State state_ = State::kStart;
  bool seen_open_tag_ = false;
  std::string pending_;
};

// Throws std::invalid_argument("unknown reasoning parser 'x' (known: ...)").
std::unique_ptr<ReasoningParser> make_reasoning_parser(const std::string& name,
                                                       ReasoningParserOptions options = {});
std::vector<std::string> reasoning_parser_names();

}  // namespace pagedllm::server
