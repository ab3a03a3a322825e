// The parts of a tool-call format that differ between models, behind the one streaming driver of
// tool_call_parser.cpp. A format names the markers that open a call region, says where a region
// ends, and reads the calls out of a complete region.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagedllm::server::tool_format {

struct ParsedCall {
  std::string name;
  std::string arguments;  // compact JSON object text
};

// Where a call region that starts at the beginning of a text ends.
struct RegionScan {
  enum class Kind { kNeedMore, kEnd, kInvalid };
  Kind kind = Kind::kNeedMore;
  size_t length = 0;  // for kEnd: the region's length

  static RegionScan need_more() { return {}; }
  static RegionScan end(size_t length) { return {Kind::kEnd, length}; }
  static RegionScan invalid() { return {Kind::kInvalid, 0}; }
};

class ToolCallFormat {
 public:
  virtual ~ToolCallFormat() = default;
  // Markers that open a call region anywhere in the text.
  virtual std::vector<std::string> markers() const = 0;
  // Markers that open one only at the start of the output (after whitespace) or after a call.
  virtual std::vector<std::string> leading_markers() const { return {}; }
  // Characters dropped between one call and the next (besides whitespace).
  virtual std::string_view separators() const { return {}; }
  // `region` starts with a marker. at_end: no more text will come, so every answer is final.
  // The answer for a prefix is kNeedMore unless the region (or its invalidity) is already
  // decided, so the result never depends on how the text was split.
  virtual RegionScan scan(std::string_view region, bool at_end) const = 0;
  // The calls in a complete region, or nullopt when it is malformed.
  virtual std::optional<std::vector<ParsedCall>> parse(std::string_view region) const = 0;
  // How this format's ids look when the caller gives no generator.
  virtual std::string make_default_id() const;
};

std::unique_ptr<ToolCallFormat> make_hermes_format();
std::unique_ptr<ToolCallFormat> make_llama3_json_format();
std::unique_ptr<ToolCallFormat> make_mistral_format();
std::unique_ptr<ToolCallFormat> make_qwen3_xml_format(const nlohmann::ordered_json& tools);
std::unique_ptr<ToolCallFormat> make_pythonic_format();
std::unique_ptr<ToolCallFormat> make_deepseek_format();

// Shared helpers of the formats.

std::string random_alphanumerics(size_t count);
// 9 random letters and digits: Mistral's templates reject any other id.
std::string mistral_tool_call_id();

// Deeper values are malformed: JSON's writer recurses, and no real call nests this deep.
constexpr size_t kMaxNesting = 128;

// The extent of the bracketed value (JSON object/array, or a Python literal with ' and "
// strings) that starts at text[0]: kEnd with its length, kNeedMore while unclosed, kInvalid on
// a closing bracket that does not match or nesting deeper than kMaxNesting.
RegionScan scan_bracketed(std::string_view text, bool python_strings);
size_t skip_whitespace(std::string_view text, size_t pos);
std::string_view trim_whitespace(std::string_view text);
bool is_whitespace(char c);
// True when text is a proper prefix of word (so more text could still complete it).
bool is_proper_prefix(std::string_view text, std::string_view word);
// The JSON text of an arguments value: an object as is, a string that holds an object parsed,
// null or absent as {}; nullopt for anything else.
std::optional<std::string> arguments_text(const nlohmann::ordered_json* arguments);
std::string compact_json(const nlohmann::ordered_json& value);
// A Python literal (str, int, float, bool, None, list, tuple, dict) as JSON; nullopt if the
// whole text is not one.
std::optional<nlohmann::ordered_json> parse_python_literal(std::string_view text);

}  // namespace pagedllm::server::tool_format
