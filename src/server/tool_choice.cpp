#include "server/tool_choice.h"

#include "server/api_error.h"

namespace pagedllm::server {

namespace {

using json = nlohmann::ordered_json;

const json* function_named(const json& tools, const std::string& name) {
  if (!tools.is_array()) return nullptr;
  for (const json& t : tools) {
    if (t["function"]["name"] == name) return &t["function"];
  }
  return nullptr;
}

json parameters_of(const json& function) {
  auto it = function.find("parameters");
  if (it == function.end() || it->is_null()) return {{"type", "object"}};
  return *it;
}

}  // namespace

void check_tools(const json& tools) {
  if (!tools.is_array()) throw bad_request("tools must be an array", "tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || t.value("type", "") != "function")
      throw bad_request(where + " must be an object with type \"function\"", "tools");
    auto f = t.find("function");
    if (f == t.end() || !f->is_object())
      throw bad_request(where + ".function must be an object", "tools");
    auto name = f->find("name");
    if (name == f->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      throw bad_request(where + ".function.name must be a non-empty string", "tools");
    auto params = f->find("parameters");
    if (params != f->end() && !params->is_null() && !params->is_object())
      throw bad_request(where + ".function.parameters must be a JSON Schema object", "tools");
  }
}

ToolChoice parse_tool_choice(const json* choice, const json& tools) {
  ToolChoice c;
  const bool has_tools = tools.is_array() && !tools.empty();
  if (!choice) {
    c.mode = has_tools ? ToolChoice::Mode::kAuto : ToolChoice::Mode::kNone;
    return c;
  }
  c.given = true;
  if (choice->is_string()) {
    const std::string s = choice->get<std::string>();
    if (s == "none") {
      c.mode = ToolChoice::Mode::kNone;
    } else if (s == "auto") {
      c.mode = ToolChoice::Mode::kAuto;
    } else if (s == "required") {
      c.mode = ToolChoice::Mode::kRequired;
    } else {
      throw bad_request(
          "tool_choice must be none, auto, required or a named function, got '" + s + "'",
          "tool_choice");
    }
  } else if (choice->is_object()) {
    const json* name = nullptr;
    if (auto f = choice->find("function"); f != choice->end() && f->is_object()) {
      if (auto n = f->find("name"); n != f->end() && n->is_string()) name = &*n;
    }
    if (choice->value("type", "") != "function" || !name)
      throw bad_request(
          "tool_choice as an object must be {\"type\": \"function\", \"function\": {\"name\": "
          "...}}",
          "tool_choice");
    c.mode = ToolChoice::Mode::kNamed;
    c.name = name->get<std::string>();
    if (!function_named(tools, c.name))
      throw bad_request("tool_choice names the function '" + c.name + "', which is not in tools",
                        "tool_choice");
  } else {
    throw bad_request("tool_choice must be a string or an object", "tool_choice");
  }
  if (!has_tools && c.mode != ToolChoice::Mode::kNone)
    throw bad_request("tool_choice needs tools", "tool_choice");
  return c;
}

StructuredOutputs tool_call_constraint(const ToolChoice& choice, const json& tools, bool parallel) {
  StructuredOutputs s;
  // Arguments travel as a JSON string, where whitespace is worth nothing; and a weak model given
  // room for it spends its tokens there.
  s.disable_any_whitespace = true;
  // Calls have the declared parameters and no others unless a schema says so (what OpenAI's
  // strict function calling asks of every schema).
  s.disable_additional_properties = true;
  if (choice.mode == ToolChoice::Mode::kNamed) {
    s.json = parameters_of(*function_named(tools, choice.name)).dump();
    return s;
  }
  json any_call = json::array();
  for (const json& t : tools) {
    const json& f = t["function"];
    any_call.push_back({{"type", "object"},
                        {"properties",
                         {{"name", {{"type", "string"}, {"enum", {f["name"]}}}},
                          {"parameters", parameters_of(f)}}},
                        {"required", {"name", "parameters"}},
                        {"additionalProperties", false}});
  }
  json schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", any_call}}}};
  if (!parallel) schema["maxItems"] = 1;
  s.json = schema.dump();
  return s;
}

std::vector<ToolCall> constrained_tool_calls(const ToolChoice& choice, const std::string& output) {
  const json value = json::parse(output, nullptr, false);
  if (value.is_discarded()) return {};
  // A named call's arguments are the output itself, as streamed.
  if (choice.mode == ToolChoice::Mode::kNamed)
    return {{random_tool_call_id(), choice.name, output}};
  std::vector<ToolCall> calls;
  if (!value.is_array()) return calls;
  for (const json& call : value) {
    if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) continue;
    calls.push_back({random_tool_call_id(), call["name"].get<std::string>(),
                     call.value("parameters", json::object()).dump()});
  }
  return calls;
}

}  // namespace pagedllm::server
