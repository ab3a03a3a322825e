#include "server/reasoning_parser.h"

#include <stdexcept>

namespace pagedllm::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kFunction = "<function";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

bool is_proper_prefix(std::string_view text, std::string_view word) {
  return text.size() < word.size() && word.starts_with(text);
}

void append(ReasoningDelta& into, const ReasoningDelta& from) {
  into.reasoning += from.reasoning;
  into.content += from.content;
}

}  // namespace

ReasoningDelta ReasoningParser::parse(std::string_view full_text) const {
  ReasoningParser whole(rules_);
  ReasoningDelta out = whole.feed(full_text);
  append(out, whole.finish());
  return out;
}

ReasoningDelta ReasoningParser::feed(std::string_view text_delta) {
  pending_.append(text_delta);
  ReasoningDelta out;
  while (step(/*at_end=*/false, out)) {
  }
  return out;
}

ReasoningDelta ReasoningParser::finish() {
  ReasoningDelta out;
  while (step(/*at_end=*/true, out)) {
  }
  return out;
}

bool ReasoningParser::step(bool at_end, ReasoningDelta& out) {
  switch (state_) {
    case State::kStart:
      return step_start(at_end);
    case State::kReasoning:
      return step_reasoning(at_end, out);
    case State::kContent:
      out.content += pending_;
      pending_.clear();
      return false;
  }
  return false;
}

// Before anything but whitespace: an opening <think> (and the whitespace before it) is dropped;
// otherwise the output starts as reasoning or content, as the rules say.
bool ReasoningParser::step_start(bool at_end) {
  const size_t pos = skip_space(pending_, 0);
  const std::string_view rest = std::string_view(pending_).substr(pos);
  if (rest.starts_with(kOpen)) {
    pending_.erase(0, pos + kOpen.size());
    seen_open_tag_ = true;
    state_ = State::kReasoning;
    return true;
  }
  if (!at_end && (rest.empty() || is_proper_prefix(rest, kOpen))) return false;
  state_ = rules_.reasoning_without_open_tag ? State::kReasoning : State::kContent;
  return true;
}

bool ReasoningParser::step_reasoning(bool at_end, ReasoningDelta& out) {
  for (size_t pos = pending_.find('<'); pos != std::string::npos;
       pos = pending_.find('<', pos + 1)) {
    const Tag tag = tag_at(pos);
    if (tag == Tag::kNone || (tag == Tag::kUndecided && at_end)) continue;
    out.reasoning.append(pending_, 0, pos);
    pending_.erase(0, pos);
    if (tag == Tag::kUndecided) return false;
    if (tag == Tag::kOpen) {
      pending_.erase(0, kOpen.size());
      seen_open_tag_ = true;
      return true;
    }
    if (tag == Tag::kClose) pending_.erase(0, kClose.size());
    state_ = State::kContent;  // a <tool_call> stays: it starts the content
    return true;
  }
  out.reasoning += pending_;
  pending_.clear();
  return false;
}

ReasoningParser::Tag ReasoningParser::tag_at(size_t pos) const {
  const std::string_view text = std::string_view(pending_).substr(pos);
  if (text.starts_with(kClose)) return Tag::kClose;
  if (!seen_open_tag_ && text.starts_with(kOpen)) return Tag::kOpen;
  if (is_proper_prefix(text, kClose) || (!seen_open_tag_ && is_proper_prefix(text, kOpen))) {
    return Tag::kUndecided;
  }
  if (!rules_.tool_call_ends_reasoning) return Tag::kNone;
  if (is_proper_prefix(text, kToolCall)) return Tag::kUndecided;
  if (!text.starts_with(kToolCall)) return Tag::kNone;
  // Only a call that goes on with <function= or <function name=...> ends the reasoning: the
  // reasoning may mention <tool_call> itself.
  const std::string_view rest = text.substr(skip_space(text, kToolCall.size()));
  if (rest.size() <= kFunction.size()) {
    return kFunction.starts_with(rest) ? Tag::kUndecided : Tag::kNone;
  }
  const char after = rest[kFunction.size()];
  return rest.starts_with(kFunction) && (after == '=' || is_space(after)) ? Tag::kToolCall
                                                                          : Tag::kNone;
}

std::vector<std::string> reasoning_parser_names() {
  return {"deepseek_r1", "qwen3"};
}

std::unique_ptr<ReasoningParser> make_reasoning_parser(const std::string& name,
                                                       ReasoningParserOptions options) {
  if (name == "deepseek_r1") return std::make_unique<ReasoningParser>(ReasoningParser::Rules{});
  if (name == "qwen3") {
    return std::make_unique<ReasoningParser>(ReasoningParser::Rules{
        .reasoning_without_open_tag = options.thinking_enabled, .tool_call_ends_reasoning = true});
  }
  throw std::invalid_argument("unknown reasoning parser '" + name +
                              "' (known: deepseek_r1, qwen3)");
}

}  // namespace pagedllm::server
