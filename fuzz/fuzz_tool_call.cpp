// libFuzzer target: the tool-call and reasoning parsers. The first byte picks a parser, the
// rest is the model's text. Parsing must not crash, and streaming the text in pieces (cut where
// the input's bytes say) must give exactly what parsing it whole gives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace {

using namespace pagedllm::server;

// Pieces of 1..16 bytes, their lengths drawn from the text itself.
std::vector<std::string_view> pieces(std::string_view text) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t n = std::min(text.size() - at, 1 + static_cast<size_t>(text[at]) % 16);
    out.push_back(text.substr(at, n));
    at += n;
  }
  return out;
}

void check_tool_parser(const std::string& name, std::string_view text) {
  static const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
      "hot": {"type": "boolean"}, "tags": {"type": "array"}}}}}])");
  int next = 0;
  auto ids = [&next] { return "id" + std::to_string(next++); };
  const ToolParseResult whole = make_tool_call_parser(name, tools, ids)->parse(text);
  next = 0;
  auto stream = make_tool_call_parser(name, tools, ids);
  std::string content;
  std::vector<ToolCall> calls;
  auto take = [&](const ToolStreamDelta& d) {
    content += d.content;
    for (const ToolCallDelta& c : d.tool_calls) {
      if (static_cast<size_t>(c.index) >= calls.size()) calls.resize(c.index + 1);
      if (!c.id.empty()) calls[c.index].id = c.id, calls[c.index].name = c.name;
      calls[c.index].arguments += c.arguments;
    }
  };
  for (std::string_view piece : pieces(text)) take(stream->feed(piece));
  take(stream->finish());
  if (content != whole.content || calls.size() != whole.tool_calls.size()) std::abort();
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCall &a = calls[i], &b = whole.tool_calls[i];
    if (a.id != b.id || a.name != b.name || a.arguments != b.arguments) std::abort();
    if (nlohmann::json::parse(a.arguments, nullptr, false).is_discarded()) std::abort();
  }
}

void check_reasoning_parser(const std::string& name, bool thinking, std::string_view text) {
  const ReasoningDelta whole = make_reasoning_parser(name, {thinking})->parse(text);
  auto stream = make_reasoning_parser(name, {thinking});
  ReasoningDelta sum;
  auto take = [&sum](const ReasoningDelta& d) {
    sum.reasoning += d.reasoning;
    sum.content += d.content;
  };
  for (std::string_view piece : pieces(text)) take(stream->feed(piece));
  take(stream->finish());
  if (sum.reasoning != whole.reasoning || sum.content != whole.content) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::vector<std::string> tool_parsers = tool_call_parser_names();
  static const std::vector<std::string> reasoning_parsers = reasoning_parser_names();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t pick = data[0] % (tool_parsers.size() + 2 * reasoning_parsers.size());
  if (pick < tool_parsers.size()) {
    check_tool_parser(tool_parsers[pick], text);
  } else {
    const size_t r = pick - tool_parsers.size();
    check_reasoning_parser(reasoning_parsers[r / 2], r % 2 == 0, text);
  }
  return 0;
}
