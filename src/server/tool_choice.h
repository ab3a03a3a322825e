// tools and tool_choice on /v1/chat/completions: checking them, and for tool_choice "required"
// or a named function, the grammar that makes the model's output a valid call (as vLLM does:
// a JSON Schema built from the tools' parameter schemas) and the calls read back from it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagedllm/sampling.h"
#include "server/tool_call_parser.h"

namespace pagedllm::server {

struct ToolChoice {
  enum class Mode { kNone, kAuto, kRequired, kNamed };
  Mode mode = Mode::kNone;
  std::string name;    // kNamed: the function
  bool given = false;  // the request set tool_choice (absent with tools means "auto")
};

// Throws ApiError(400, param "tools") unless every tool is {"type": "function", "function":
// {"name": non-empty string, "parameters": object (optional)}}.
void check_tools(const nlohmann::ordered_json& tools);
// tool_choice (may be null) against the request's tools (null when absent). Throws ApiError(400).
ToolChoice parse_tool_choice(const nlohmann::ordered_json* choice,
                             const nlohmann::ordered_json& tools);

// For kRequired and kNamed: the constraint on the output. kNamed: the function's arguments
// object; kRequired: a JSON array of {"name", "parameters"} objects, one call at most unless
// parallel.
StructuredOutputs tool_call_constraint(const ToolChoice& choice,
                                       const nlohmann::ordered_json& tools, bool parallel);

// The calls in an output made under tool_call_constraint, with fresh ids; empty when the
// output is cut short (max_tokens) and does not parse.
std::vector<ToolCall> constrained_tool_calls(const ToolChoice& choice, const std::string& output);

}  // namespace pagedllm::server
