// The qwen3_xml format (Qwen3-Coder; vLLM's `qwen3_xml` and `qwen3_coder`):
//
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   </function>
//   </tool_call>
//
// Parameter values are raw text; the tool's JSON schema says what JSON each becomes (a string
// stays a string, integer/number/boolean/object/array are parsed, "null" is null), with
// vLLM's rules for values that do not parse.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "server/tool_call_format.h"

namespace pagedllm::server::tool_format {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kToolCallEnd = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The schema's type name for a parameter, lowercased; "string" when it has none. Of a type
// list such as ["integer", "null"], the first that is not "null".
std::string parameter_type(const Json& schema) {
  if (!schema.is_object() || !schema.contains("type")) return "string";
  const Json& type = schema["type"];
  if (type.is_string()) return lowercase(trim_whitespace(type.get<std::string>()));
  if (type.is_array()) {
    for (const Json& t : type) {
      if (t.is_string() && t.get<std::string>() != "null") return lowercase(t.get<std::string>());
    }
  }
  return "string";
}

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (text.starts_with(p)) return true;
  }
  return false;
}

std::optional<Json> parse_integer(std::string_view text) {
  text = trim_whitespace(text);
  if (text.starts_with('+')) text.remove_prefix(1);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return Json(value);
}

// A number; an integral one as an integer, as vLLM writes it.
std::optional<Json> parse_number(std::string_view text) {
  const std::string digits(trim_whitespace(text));
  char* end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  if (value == std::trunc(value) && std::fabs(value) < 9.0e15) {
    return Json(static_cast<int64_t>(value));
  }
  return Json(value);
}

// Brackets nested deeper than kMaxNesting (counting those in strings too, to stay simple).
bool nests_too_deep(std::string_view value) {
  size_t depth = 0;
  for (char c : value) {
    if (c == '[' || c == '{' || c == '(') {
      if (++depth > kMaxNesting) return true;
    } else if ((c == ']' || c == '}' || c == ')') && depth > 0) {
      --depth;
    }
  }
  return false;
}

Json convert_by_type(const std::string& value, const std::string& type) {
  if (type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" ||
      type == "enum") {
    return value;
  }
  if (starts_with_any(type, {"int", "uint", "long", "short", "unsigned"})) {
    return parse_integer(value).value_or(Json(value));
  }
  if (starts_with_any(type, {"num", "float"})) return parse_number(value).value_or(Json(value));
  if (type == "boolean" || type == "bool" || type == "binary") {
    return lowercase(trim_whitespace(value)) == "true";
  }
  if (nests_too_deep(value)) return value;
  if (type == "object" || type == "array" || type == "arr" ||
      starts_with_any(type, {"dict", "list"})) {
    const Json parsed = Json::parse(value, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  return parse_python_literal(value).value_or(Json(value));
}

class Qwen3XmlFormat : public ToolCallFormat {
 public:
  explicit Qwen3XmlFormat(const Json& tools) { index_parameters(tools); }

  std::vector<std::string> markers() const override {
    return {std::string(kToolCall), std::string(kFunction)};
  }

  RegionScan scan(std::string_view region, bool at_end) const override {
    if (region.starts_with(kToolCall)) {
      const std::string_view rest = region.substr(skip_whitespace(region, kToolCall.size()));
      if (rest.empty() || is_proper_prefix(rest, kFunction)) {
        return at_end ? RegionScan::invalid() : RegionScan::need_more();
      }
      if (!rest.starts_with(kFunction)) return RegionScan::invalid();
      return scan_to_closing(region, kToolCallEnd, at_end);
    }
    // A bare <function=...> (the model left out <tool_call>), perhaps closed by </tool_call>.
    const RegionScan function = scan_to_closing(region, kFunctionEnd, at_end);
    if (function.kind != RegionScan::Kind::kEnd) return function;
    const size_t after = skip_whitespace(region, function.length);
    const std::string_view rest = region.substr(after);
    if (rest.starts_with(kToolCallEnd)) return RegionScan::end(after + kToolCallEnd.size());
    if (!at_end && (rest.empty() || is_proper_prefix(rest, kToolCallEnd))) {
      return RegionScan::need_more();
    }
    return function;
  }

  // Every <function=NAME>...</function> of the region; each must be closed.
  std::optional<std::vector<ParsedCall>> parse(std::string_view region) const override {
    std::vector<ParsedCall> calls;
    size_t pos = 0;
    while ((pos = region.find(kFunction, pos)) != std::string_view::npos) {
      const size_t name_end = region.find('>', pos);
      const size_t end = region.find(kFunctionEnd, pos);
      if (name_end == std::string_view::npos || end == std::string_view::npos || end < name_end) {
        return std::nullopt;
      }
      const std::string name(trim_whitespace(
          region.substr(pos + kFunction.size(), name_end - pos - kFunction.size())));
      if (name.empty()) return std::nullopt;
      const Json arguments = read_parameters(name, region.substr(name_end + 1, end - name_end - 1));
      calls.push_back({name, compact_json(arguments)});
      pos = end + kFunctionEnd.size();
    }
    if (calls.empty()) return std::nullopt;
    return calls;
  }

 private:
  static RegionScan scan_to_closing(std::string_view region, std::string_view closing,
                                    bool at_end) {
    const size_t close = region.find(closing);
    if (close != std::string_view::npos) return RegionScan::end(close + closing.size());
    return at_end ? RegionScan::end(region.size()) : RegionScan::need_more();
  }

  // A parameter's value runs to </parameter>, or to the next <parameter= when that is missing;
  // one newline on each side is layout.
  Json read_parameters(const std::string& function, std::string_view body) const {
    Json arguments = Json::object();
    size_t pos = 0;
    while ((pos = body.find(kParameter, pos)) != std::string_view::npos) {
      const size_t name_end = body.find('>', pos);
      if (name_end == std::string_view::npos) break;
      const std::string name(trim_whitespace(
          body.substr(pos + kParameter.size(), name_end - pos - kParameter.size())));
      const size_t value_begin = name_end + 1;
      const size_t closed = body.find(kParameterEnd, value_begin);
      const size_t value_end = std::min({closed, body.find(kParameter, value_begin), body.size()});
      std::string_view value = body.substr(value_begin, value_end - value_begin);
      if (value.starts_with('\n')) value.remove_prefix(1);
      if (value.ends_with('\n')) value.remove_suffix(1);
      arguments[name] = convert(function, name, std::string(value));
      pos = value_end == closed ? closed + kParameterEnd.size() : value_end;
    }
    return arguments;
  }

  Json convert(const std::string& function, const std::string& parameter,
               const std::string& value) const {
    if (lowercase(value) == "null") return nullptr;
    const auto tool = parameters_.find(function);
    if (tool == parameters_.end() || !tool->second.contains(parameter)) return value;
    return convert_by_type(value, parameter_type(tool->second[parameter]));
  }

  // The properties schema of each tool's parameters, by tool name.
  void index_parameters(const Json& tools) {
    if (!tools.is_array()) return;
    for (const Json& tool : tools) {
      const Json& function =
          tool.is_object() && tool.contains("function") ? tool["function"] : tool;
      if (!function.is_object() || !function.contains("name") || !function["name"].is_string()) {
        continue;
      }
      const Json parameters = function.value("parameters", Json::object());
      const Json properties =
          parameters.is_object() ? parameters.value("properties", parameters) : Json::object();
      parameters_[function["name"].get<std::string>()] =
          properties.is_object() ? properties : Json::object();
    }
  }

  std::map<std::string, Json> parameters_;
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_qwen3_xml_format(const Json& tools) {
  return std::make_unique<Qwen3XmlFormat>(tools);
}

}  // namespace pagedllm::server::tool_format
