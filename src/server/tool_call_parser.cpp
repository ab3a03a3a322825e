// The streaming driver shared by every tool-call format, and the registry of formats by name.
//
// The driver is a small state machine over the text not yet sent:
//   start/after-call: whitespace (and separators) before a possible call; leading markers count
//   content:          text is sent, except a tail that may be the start of a marker
//   region:           a marker was seen; wait until the format says where the region ends,
//                     then send its calls, or, if it is malformed, the marker as content
#include "server/tool_call_parser.h"

#include <algorithm>
#include <stdexcept>

#include "server/tool_call_format.h"

namespace pagedllm::server {
namespace {

using namespace tool_format;

bool starts_with_any(std::string_view text, const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const std::string& w) { return text.starts_with(w); });
}

bool is_prefix_of_any(std::string_view text, const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const std::string& w) { return is_proper_prefix(text, w); });
}

// The longest suffix of text that is a proper prefix of some marker: it must wait for more text.
size_t held_back_length(std::string_view text, const std::vector<std::string>& markers) {
  size_t longest = 0;
  for (const std::string& marker : markers) {
    const size_t max_len = std::min(text.size(), marker.size() - 1);
    for (size_t len = max_len; len > longest; --len) {
      if (text.substr(text.size() - len) == std::string_view(marker).substr(0, len)) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

void append(ToolStreamDelta& into, ToolStreamDelta&& from) {
  into.content += from.content;
  for (ToolCallDelta& d : from.tool_calls) into.tool_calls.push_back(std::move(d));
}

class CallStream {
 public:
  CallStream(const ToolCallFormat& format, const ToolCallIdGenerator& make_id)
      : format_(format),
        make_id_(make_id),
        markers_(format.markers()),
        leading_markers_(format.leading_markers()) {}

  ToolStreamDelta feed(std::string_view text) {
    pending_.append(text);
    ToolStreamDelta out;
    while (step(/*at_end=*/false, out)) {
    }
    return out;
  }

  ToolStreamDelta finish() {
    ToolStreamDelta out;
    while (step(/*at_end=*/true, out)) {
    }
    out.content += pending_;  // empty: every state consumes all text at the end
    pending_.clear();
    return out;
  }

 private:
  enum class State { kStart, kContent, kRegion, kAfterCall };

  // One transition; false when nothing more can be decided with the text at hand.
  bool step(bool at_end, ToolStreamDelta& out) {
    switch (state_) {
      case State::kStart:
      case State::kAfterCall:
        return step_boundary(at_end);
      case State::kContent:
        return step_content(at_end, out);
      case State::kRegion:
        return step_region(at_end, out);
    }
    return false;
  }

  bool step_boundary(bool at_end) {
    const bool after_call = state_ == State::kAfterCall;
    size_t pos = 0;
    while (pos < pending_.size() &&
           (is_whitespace(pending_[pos]) ||
            (after_call && format_.separators().find(pending_[pos]) != std::string_view::npos))) {
      ++pos;
    }
    const std::string_view rest = std::string_view(pending_).substr(pos);
    const bool opens_region =
        starts_with_any(rest, markers_) || starts_with_any(rest, leading_markers_);
    const bool undecided = !at_end && (rest.empty() || is_prefix_of_any(rest, markers_) ||
                                       is_prefix_of_any(rest, leading_markers_));
    if (opens_region) {
      // The layout before a call is dropped, unless the call turns out malformed.
      layout_ = pending_.substr(0, pos);
      pending_.erase(0, pos);
      state_ = State::kRegion;
      return true;
    }
    if (undecided) return false;
    if (after_call) pending_.erase(0, pos);  // layout after a call is dropped
    state_ = State::kContent;
    return true;
  }

  bool step_content(bool at_end, ToolStreamDelta& out) {
    size_t first = std::string::npos;
    for (const std::string& marker : markers_) first = std::min(first, pending_.find(marker));
    if (first != std::string::npos) {
      out.content.append(pending_, 0, first);
      pending_.erase(0, first);
      state_ = State::kRegion;
      return true;
    }
    const size_t keep = at_end ? 0 : held_back_length(pending_, markers_);
    out.content.append(pending_, 0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return false;
  }

  bool step_region(bool at_end, ToolStreamDelta& out) {
    const RegionScan scan = format_.scan(pending_, at_end);
    if (scan.kind == RegionScan::Kind::kNeedMore && !at_end) return false;
    if (scan.kind == RegionScan::Kind::kEnd && scan.length > 0) {
      const size_t length = std::min(scan.length, pending_.size());
      std::optional<std::vector<ParsedCall>> calls =
          format_.parse(std::string_view(pending_).substr(0, length));
      if (calls && !calls->empty()) {
        layout_.clear();
        emit(*calls, out);
        pending_.erase(0, length);
        state_ = State::kAfterCall;
        return true;
      }
    }
    // Malformed: the marker is plain text after all; the text after it is read again.
    const size_t marker_length = matched_marker_length();
    out.content += layout_;
    layout_.clear();
    out.content.append(pending_, 0, marker_length);
    pending_.erase(0, marker_length);
    state_ = State::kContent;
    return true;
  }

  size_t matched_marker_length() const {
    size_t length = 0;
    for (const auto* list : {&markers_, &leading_markers_}) {
      for (const std::string& m : *list) {
        if (std::string_view(pending_).starts_with(m)) length = std::max(length, m.size());
      }
    }
    return std::max<size_t>(length, 1);
  }

  void emit(const std::vector<ParsedCall>& calls, ToolStreamDelta& out) {
    for (const ParsedCall& call : calls) {
      const std::string id = make_id_ ? make_id_() : format_.make_default_id();
      out.tool_calls.push_back({next_index_, id, call.name, ""});
      out.tool_calls.push_back({next_index_, "", "", call.arguments});
      ++next_index_;
    }
  }

  const ToolCallFormat& format_;
  const ToolCallIdGenerator& make_id_;
  const std::vector<std::string> markers_;
  const std::vector<std::string> leading_markers_;
  std::string pending_;  // text not yet sent
  std::string layout_;   // whitespace dropped before the region being read
  State state_ = State::kStart;
  int next_index_ = 0;
};

class FormatToolCallParser : public ToolCallParser {
 public:
  FormatToolCallParser(std::unique_ptr<ToolCallFormat> format, ToolCallIdGenerator make_id)
      : format_(std::move(format)), make_id_(std::move(make_id)), stream_(*format_, make_id_) {}

  ToolParseResult parse(std::string_view full_text) override {
    CallStream whole(*format_, make_id_);
    ToolStreamDelta all = whole.feed(full_text);
    append(all, whole.finish());
    ToolParseResult result;
    result.content = std::move(all.content);
    for (ToolCallDelta& d : all.tool_calls) {
      if (!d.name.empty()) {
        result.tool_calls.push_back({std::move(d.id), std::move(d.name), ""});
      } else if (!result.tool_calls.empty()) {
        result.tool_calls.back().arguments += d.arguments;
      }
    }
    return result;
  }

  ToolStreamDelta feed(std::string_view text_delta) override { return stream_.feed(text_delta); }
  ToolStreamDelta finish() override { return stream_.finish(); }

 private:
  std::unique_ptr<ToolCallFormat> format_;
  ToolCallIdGenerator make_id_;
  CallStream stream_;
};

using FormatFactory = std::unique_ptr<ToolCallFormat> (*)(const nlohmann::ordered_json& tools);

struct RegisteredFormat {
  const char* name;
  FormatFactory make;
};

const std::vector<RegisteredFormat>& registered_formats() {
  static const std::vector<RegisteredFormat> formats = {
      {"hermes", [](const nlohmann::ordered_json&) { return make_hermes_format(); }},
      {"llama3_json", [](const nlohmann::ordered_json&) { return make_llama3_json_format(); }},
      {"llama4_json", [](const nlohmann::ordered_json&) { return make_llama3_json_format(); }},
      {"mistral", [](const nlohmann::ordered_json&) { return make_mistral_format(); }},
      {"qwen3_xml", [](const nlohmann::ordered_json& t) { return make_qwen3_xml_format(t); }},
      {"qwen3_coder", [](const nlohmann::ordered_json& t) { return make_qwen3_xml_format(t); }},
      {"pythonic", [](const nlohmann::ordered_json&) { return make_pythonic_format(); }},
      {"llama4_pythonic", [](const nlohmann::ordered_json&) { return make_pythonic_format(); }},
      {"deepseek_v3", [](const nlohmann::ordered_json&) { return make_deepseek_format(); }},
      {"deepseek_v31", [](const nlohmann::ordered_json&) { return make_deepseek_format(); }},
  };
  return formats;
}

}  // namespace

std::string random_tool_call_id() {
  return "call_" + tool_format::random_alphanumerics(24);
}

std::vector<std::string> tool_call_parser_names() {
  std::vector<std::string> names;
  for (const RegisteredFormat& f : registered_formats()) names.emplace_back(f.name);
  return names;
}

std::unique_ptr<ToolCallParser> make_tool_call_parser(const std::string& name,
                                                      const nlohmann::ordered_json& tools,
                                                      ToolCallIdGenerator make_id) {
  for (const RegisteredFormat& f : registered_formats()) {
    if (name == f.name) return std::make_unique<FormatToolCallParser>(f.make(tools), make_id);
  }
  std::string known;
  for (const std::string& n : tool_call_parser_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown tool call parser '" + name + "' (known: " + known + ")");
}

}  // namespace pagedllm::server
