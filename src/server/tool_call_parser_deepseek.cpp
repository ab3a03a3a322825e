// The DeepSeek formats (vLLM's `deepseek_v3` and `deepseek_v31`), one region of calls:
//
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//   ```json
//   {...}
//   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>                       (V3, R1)
//
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>
//   <｜tool▁calls▁end｜>                                             (V3.1)
//
// Both shapes are read by either name.
#include "server/tool_call_format.h"

namespace pagedllm::server::tool_format {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSeparator = "<｜tool▁sep｜>";

// The arguments of a V3 call: the JSON inside a ```json fence (the fence may be missing).
std::string_view unfenced(std::string_view text) {
  text = trim_whitespace(text);
  if (text.starts_with("```")) {
    text.remove_prefix(text.find('\n') == std::string_view::npos ? 3 : text.find('\n') + 1);
    if (text.ends_with("```")) text.remove_suffix(3);
  }
  return trim_whitespace(text);
}

// One call: the text between <｜tool▁call▁begin｜> and <｜tool▁call▁end｜>.
std::optional<ParsedCall> read_call(std::string_view call) {
  const size_t separator = call.find(kSeparator);
  if (separator == std::string_view::npos) return std::nullopt;
  std::string_view name = trim_whitespace(call.substr(0, separator));
  std::string_view arguments = call.substr(separator + kSeparator.size());
  if (name == "function") {  // V3: the name is the first line after the separator
    const size_t line_end = arguments.find('\n');
    name = trim_whitespace(arguments.substr(0, line_end));
    arguments = line_end == std::string_view::npos ? "" : unfenced(arguments.substr(line_end));
  }
  if (name.empty()) return std::nullopt;
  const Json parsed = Json::parse(trim_whitespace(arguments), nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  std::optional<std::string> text = arguments_text(&parsed);
  if (!text) return std::nullopt;
  return ParsedCall{std::string(name), std::move(*text)};
}

class DeepSeekFormat : public ToolCallFormat {
 public:
  std::vector<std::string> markers() const override { return {std::string(kCallsBegin)}; }

  RegionScan scan(std::string_view region, bool at_end) const override {
    const size_t end = region.find(kCallsEnd);
    if (end != std::string_view::npos) return RegionScan::end(end + kCallsEnd.size());
    return at_end ? RegionScan::end(region.size()) : RegionScan::need_more();
  }

  // Every call of the region, each closed by <｜tool▁call▁end｜>.
  std::optional<std::vector<ParsedCall>> parse(std::string_view region) const override {
    std::vector<ParsedCall> calls;
    size_t pos = 0;
    while ((pos = region.find(kCallBegin, pos)) != std::string_view::npos) {
      const size_t begin = pos + kCallBegin.size();
      const size_t end = region.find(kCallEnd, begin);
      if (end == std::string_view::npos) return std::nullopt;
      std::optional<ParsedCall> call = read_call(region.substr(begin, end - begin));
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
      pos = end + kCallEnd.size();
    }
    return calls;
  }
};

}  // namespace

std::unique_ptr<ToolCallFormat> make_deepseek_format() {
  return std::make_unique<DeepSeekFormat>();
}

}  // namespace pagedllm::server::tool_format
