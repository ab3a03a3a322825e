// Tool-call parsers: find the function calls a model wrote into its text, in the formats vLLM's
// `--tool-call-parser` names (hermes, llama3_json, mistral, qwen3_xml, pythonic, deepseek_v3 and
// aliases). docs/TOOLS.md describes each format.
//
// One parser serves one response choice, either whole (parse) or streamed (feed ... finish).
// Streaming holds back text that may be the start of a call marker, and sends a call only once
// it is complete and valid, so a call that turns out malformed can still fall back to content:
// the concatenated stream always equals parse() of the whole text, however it was split.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagedllm::server {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a compact JSON object text, "{}" when the call has none
};

// One piece of a streamed call: id and name only in a call's first delta, then argument text.
struct ToolCallDelta {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

struct ToolParseResult {
  std::string content;  // the text that is not a call, markup excluded
  std::vector<ToolCall> tool_calls;
};

struct ToolStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
};

// Makes the ids of calls ("call_" + 24 alphanumerics by default; 9 alphanumerics for mistral,
// whose templates reject other ids). Tests inject a deterministic one.
using ToolCallIdGenerator = std::function<std::string()>;

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  // The whole output at once; independent of any stream fed to this parser.
  virtual ToolParseResult parse(std::string_view full_text) = 0;
  // The next piece of a streamed output; returns what can be sent now.
  virtual ToolStreamDelta feed(std::string_view text_delta) = 0;
  // The end of the stream: flushes held-back text and any call the end completes.
  virtual ToolStreamDelta finish() = 0;
};

// `tools` is the request's "tools" array (OpenAI shape); qwen3_xml reads the parameter types
// from it. Throws std::invalid_argument("unknown tool call parser 'x' (known: ...)").
std::unique_ptr<ToolCallParser> make_tool_call_parser(const std::string& name,
                                                      const nlohmann::ordered_json& tools,
                                                      ToolCallIdGenerator make_id = {});
std::vector<std::string> tool_call_parser_names();

// "call_" followed by 24 random letters and digits, as OpenAI's ids look.
std::string random_tool_call_id();

}  // namespace pagedllm::server
