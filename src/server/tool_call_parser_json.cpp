// The formats whose calls are JSON: hermes (Qwen2.5/Qwen3, Hermes), llama3_json (Llama 3.1-4)
// and mistral (the JSON-array form and the v11+ `name[ARGS]{...}` forms).
#include <cctype>

#include "server/tool_call_format.h"

namespace pagedllm::server::tool_format {

using Json = nlohmann::ordered_json;

std::string compact_json(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<std::string> arguments_text(const Json* arguments) {
  if (arguments == nullptr || arguments->is_null()) return "{}";
  if (arguments->is_object()) return compact_json(*arguments);
  if (arguments->is_string()) {  // some models write the arguments as a JSON string
    const Json inner = Json::parse(arguments->get<std::string>(), nullptr, false);
    if (!inner.is_discarded() && inner.is_object()) return compact_json(inner);
  }
  return std::nullopt;
}

namespace {

const Json* find_member(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// {"name": ..., "arguments"|"parameters": {...}} as a call; nullopt if it is not one.
std::optional<ParsedCall> call_from_json(const Json& object) {
  if (!object.is_object()) return std::nullopt;
  const Json* name = find_member(object, "name");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
    return std::nullopt;
  }
  const Json* arguments = find_member(object, "arguments");
  if (arguments == nullptr) arguments = find_member(object, "parameters");
  std::optional<std::string> text = arguments_text(arguments);
  if (!text) return std::nullopt;
  return ParsedCall{name->get<std::string>(), std::move(*text)};
}

std::optional<Json> parse_json(std::string_view text) {
  Json value = Json::parse(text, nullptr, false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

// A region that is a marker, whitespace and a bracketed JSON value starting with `open`.
RegionScan scan_marker_then_json(std::string_view region, size_t marker_length, char open,
                                 bool at_end) {
  const size_t pos = skip_whitespace(region, marker_length);
  if (pos == region.size()) return at_end ? RegionScan::invalid() : RegionScan::need_more();
  if (region[pos] != open) return RegionScan::invalid();
  const RegionScan value = scan_bracketed(region.substr(pos), false);
  if (value.kind == RegionScan::Kind::kEnd) return RegionScan::end(pos + value.length);
  return at_end ? RegionScan::invalid() : value;
}

// <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>; the closing tag may be missing
// at the end of the output.
class HermesFormat : public ToolCallFormat {
 public:
  std::vector<std::string> markers() const override { return {std::string(kOpen)}; }

  RegionScan scan(std::string_view region, bool at_end) const override {
    const RegionScan object = scan_marker_then_json(region, kOpen.size(), '{', at_end);
    if (object.kind != RegionScan::Kind::kEnd) return object;
    const size_t after = skip_whitespace(region, object.length);
    const std::string_view rest = region.substr(after);
    if (rest.starts_with(kClose)) return RegionScan::end(after + kClose.size());
    if (!at_end && (rest.empty() || is_proper_prefix(rest, kClose))) {
      return RegionScan::need_more();
    }
    return object;  // no closing tag: the call ends with its object
  }

  std::optional<std::vector<ParsedCall>> parse(std::string_view region) const override {
    std::string_view body = region.substr(kOpen.size());
    body = trim_whitespace(body);
    if (body.ends_with(kClose)) body.remove_suffix(kClose.size());
    const std::optional<Json> object = parse_json(body);
    if (!object) return std::nullopt;
    std::optional<ParsedCall> call = call_from_json(*object);
    if (!call) return std::nullopt;
    return std::vector<ParsedCall>{std::move(*call)};
  }

 private:
  static constexpr std::string_view kOpen = "<tool_call>";
  static constexpr std::string_view kClose = "</tool_call>";
};

// {"name": "f", "parameters": {...}} at the start of the output or after <|python_tag|>,
// several separated by ';'.
class Llama3JsonFormat : public ToolCallFormat {
 public:
  std::vector<std::string> markers() const override { return {std::string(kPythonTag)}; }
  std::vector<std::string> leading_markers() const override { return {"{"}; }
  std::string_view separators() const override { return ";"; }

  RegionScan scan(std::string_view region, bool at_end) const override {
    const size_t marker = region.starts_with(kPythonTag) ? kPythonTag.size() : 0;
    return scan_marker_then_json(region, marker, '{', at_end);
  }

  std::optional<std::vector<ParsedCall>> parse(std::string_view region) const override {
    if (region.starts_with(kPythonTag)) region.remove_prefix(kPythonTag.size());
    const std::optional<Json> object = parse_json(region);
    if (!object) return std::nullopt;
    if (object->contains("arguments") && object->contains("parameters")) return std::nullopt;
    std::optional<ParsedCall> call = call_from_json(*object);
    if (!call) return std::nullopt;
    return std::vector<ParsedCall>{std::move(*call)};
  }

 private:
  static constexpr std::string_view kPythonTag = "<|python_tag|>";
};

bool is_mistral_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]   (v3 tokenizers)
// [TOOL_CALLS]f{"a": 1}, [TOOL_CALLS]f[ARGS]{"a": 1} and [TOOL_CALLS]f[CALL_ID]id[ARGS]{...},
// one marker per call (v11+ tokenizers; the call id the model may write is not kept)
class MistralFormat : public ToolCallFormat {
 public:
  std::vector<std::string> markers() const override { return {std::string(kToolCalls)}; }

  RegionScan scan(std::string_view region, bool at_end) const override {
    const size_t pos = skip_whitespace(region, kToolCalls.size());
    if (pos == region.size()) return at_end ? RegionScan::invalid() : RegionScan::need_more();
    const char first = region[pos];
    if (first == '[' || first == '{') return scan_marker_then_json(region, pos, first, at_end);
    if (!is_mistral_name_char(first)) return RegionScan::invalid();
    const size_t arguments = skip_name_and_call_id(region, pos);
    if (arguments == kUndecided) return at_end ? RegionScan::invalid() : RegionScan::need_more();
    if (arguments == kNotACall) return RegionScan::invalid();
    return scan_marker_then_json(region, arguments, '{', at_end);
  }

  std::optional<std::vector<ParsedCall>> parse(std::string_view region) const override {
    const std::string_view body = trim_whitespace(region.substr(kToolCalls.size()));
    if (body.starts_with('[')) return parse_array(body);
    if (body.starts_with('{')) {
      const std::optional<Json> object = parse_json(body);
      std::optional<ParsedCall> call = object ? call_from_json(*object) : std::nullopt;
      if (!call) return std::nullopt;
      return std::vector<ParsedCall>{std::move(*call)};
    }
    return parse_named(body);
  }

  std::string make_default_id() const override { return mistral_tool_call_id(); }

 private:
  static std::optional<std::vector<ParsedCall>> parse_array(std::string_view body) {
    const std::optional<Json> array = parse_json(body);
    if (!array || !array->is_array()) return std::nullopt;
    std::vector<ParsedCall> calls;
    for (const Json& item : *array) {
      std::optional<ParsedCall> call = call_from_json(item);
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
    return calls;
  }

  static constexpr size_t kUndecided = std::string_view::npos;
  static constexpr size_t kNotACall = kUndecided - 1;

  static size_t skip_name_chars(std::string_view text, size_t pos) {
    while (pos < text.size() && is_mistral_name_char(text[pos])) ++pos;
    return pos;
  }

  // Where the arguments of `name[CALL_ID]id[ARGS]{...}` start (both bracketed parts optional);
  // kUndecided while the text so far could still go either way.
  static size_t skip_name_and_call_id(std::string_view text, size_t name) {
    size_t pos = skip_name_chars(text, name);
    std::string_view rest = text.substr(pos);
    if (rest.starts_with(kCallId)) {
      pos = skip_name_chars(text, pos + kCallId.size());
      rest = text.substr(pos);
      if (rest.empty() || is_proper_prefix(rest, kArgs)) return kUndecided;
      if (!rest.starts_with(kArgs)) return kNotACall;
    } else if (rest.empty() || is_proper_prefix(rest, kCallId) || is_proper_prefix(rest, kArgs)) {
      return kUndecided;
    }
    return rest.starts_with(kArgs) ? pos + kArgs.size() : pos;
  }

  static std::optional<std::vector<ParsedCall>> parse_named(std::string_view body) {
    const size_t arguments_at = skip_name_and_call_id(body, 0);
    if (arguments_at >= kNotACall) return std::nullopt;
    const std::optional<Json> arguments = parse_json(body.substr(arguments_at));
    if (!arguments || !arguments->is_object()) return std::nullopt;
    return std::vector<ParsedCall>{
        {std::string(body.substr(0, skip_name_chars(body, 0))), compact_json(*arguments)}};
  }

  static constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
  static constexpr std::string_view kCallId = "[CALL_ID]";
  static constexpr std::string_view kArgs = "[ARGS]";
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_hermes_format() {
  return std::make_unique<HermesFormat>();
}
std::unique_ptr<ToolCallFormat> make_llama3_json_format() {
  return std::make_unique<Llama3JsonFormat>();
}
std::unique_ptr<ToolCallFormat> make_mistral_format() {
  return std::make_unique<MistralFormat>();
}

}  // namespace pagedllm::server::tool_format
