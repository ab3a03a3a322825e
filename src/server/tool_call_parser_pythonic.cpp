// The pythonic format (Llama 3.2 and Llama 4, vLLM's `pythonic` and `llama4_pythonic`): the
// output is a Python list of calls with keyword arguments, [get_weather(city="Paris", days=3)],
// optionally between <|python_start|> and <|python_end|>. The arguments are Python literals;
// they become JSON (True -> true, None -> null, tuples -> arrays).
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "server/tool_call_format.h"

namespace pagedllm::server::tool_format {
namespace {

using Json = nlohmann::ordered_json;

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier_char(char c) {
  return is_identifier_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// A recursive-descent reader of the Python subset models write in calls.
class PythonReader {
 public:
  explicit PythonReader(std::string_view text) : text_(text) {}

  std::optional<std::vector<ParsedCall>> call_list() {
    if (!consume('[')) return std::nullopt;
    std::vector<ParsedCall> calls;
    while (!consume(']')) {
      std::optional<ParsedCall> call = read_call();
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
      if (!consume(',') && !peek_is(']')) return std::nullopt;
    }
    return calls;
  }

  std::optional<Json> value() {
    if (++depth_ > kMaxNesting) return std::nullopt;
    std::optional<Json> v = read_value();
    --depth_;
    return v;
  }

  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && (is_whitespace(text_[pos_]) || text_[pos_] == '\f')) ++pos_;
  }
  bool peek_is(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool consume(char c) {
    if (!peek_is(c)) return false;
    ++pos_;
    return true;
  }

  std::optional<std::string> identifier() {
    skip_space();
    if (pos_ >= text_.size() || !is_identifier_start(text_[pos_])) return std::nullopt;
    const size_t begin = pos_;
    while (pos_ < text_.size() && is_identifier_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(begin, pos_ - begin));
  }

  std::optional<ParsedCall> read_call() {
    std::optional<std::string> name = identifier();
    if (!name || !consume('(')) return std::nullopt;
    Json arguments = Json::object();
    while (!consume(')')) {
      std::optional<std::string> key = identifier();
      if (!key || !consume('=')) return std::nullopt;  // positional arguments have no name
      std::optional<Json> v = value();
      if (!v) return std::nullopt;
      arguments[*key] = std::move(*v);
      if (!consume(',') && !peek_is(')')) return std::nullopt;
    }
    return ParsedCall{std::move(*name), compact_json(arguments)};
  }

  std::optional<Json> read_value() {
    skip_space();
    if (pos_ >= text_.size()) return std::nullopt;
    const char c = text_[pos_];
    if (c == '"' || c == '\'' ||
        ((c == 'r' || c == 'R') && pos_ + 1 < text_.size() &&
         (text_[pos_ + 1] == '"' || text_[pos_ + 1] == '\''))) {
      return strings();
    }
    if (c == '[') return sequence('[', ']');
    if (c == '(') return sequence('(', ')');
    if (c == '{') return dict();
    if (is_digit(c) || c == '-' || c == '+' || c == '.') return number();
    std::optional<std::string> word = identifier();
    if (word == "True") return Json(true);
    if (word == "False") return Json(false);
    if (word == "None") return Json(nullptr);
    return std::nullopt;
  }

  // Adjacent literals concatenate, as in Python: "a" 'b' == "ab".
  std::optional<Json> strings() {
    std::string out;
    do {
      if (!string_literal(out)) return std::nullopt;
      skip_space();
    } while (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\''));
    return Json(std::move(out));
  }

  bool string_literal(std::string& out) {
    const bool raw = text_[pos_] == 'r' || text_[pos_] == 'R';
    if (raw) ++pos_;
    const char quote = text_[pos_];
    const std::string triple(3, quote);
    const bool is_triple = text_.substr(pos_, 3) == triple;
    pos_ += is_triple ? 3 : 1;
    while (pos_ < text_.size()) {
      if (is_triple ? text_.substr(pos_, 3) == triple : text_[pos_] == quote) {
        pos_ += is_triple ? 3 : 1;
        return true;
      }
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
        if (raw) {
          out.append(text_.substr(pos_, 2));
          pos_ += 2;
        } else if (!escape(out)) {
          return false;
        }
        continue;
      }
      if (!is_triple && text_[pos_] == '\n') return false;
      out += text_[pos_++];
    }
    return false;
  }

  // The escape at pos_ (a backslash), appended to out.
  bool escape(std::string& out) {
    const char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case 'n':
        out += '\n';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case 'v':
        out += '\v';
        return true;
      case 'a':
        out += '\a';
        return true;
      case '0':
        out += '\0';
        return true;
      case '\\':
      case '\'':
      case '"':
        out += e;
        return true;
      case '\n':
        return true;  // a line continuation
      case 'x':
        return hex_escape(out, 2);
      case 'u':
        return hex_escape(out, 4);
      case 'U':
        return hex_escape(out, 8);
      default:  // Python keeps unknown escapes as they are
        out += '\\';
        out += e;
        return true;
    }
  }

  bool hex_escape(std::string& out, size_t digits) {
    if (text_.size() - pos_ < digits) return false;
    uint32_t code_point = 0;
    const char* begin = text_.data() + pos_;
    const auto [end, error] = std::from_chars(begin, begin + digits, code_point, 16);
    if (error != std::errc() || end != begin + digits || code_point > 0x10FFFF) return false;
    append_utf8(out, code_point);
    pos_ += digits;
    return true;
  }

  std::optional<Json> number() {
    std::string digits;
    const size_t begin = pos_;
    if (text_[pos_] == '-' || text_[pos_] == '+') ++pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      const bool exponent_sign =
          (c == '-' || c == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
      if (!is_digit(c) && c != '_' && c != '.' && c != 'e' && c != 'E' && !exponent_sign) break;
      is_float = is_float || c == '.' || c == 'e' || c == 'E';
      ++pos_;
    }
    for (char c : text_.substr(begin, pos_ - begin)) {
      if (c != '_') digits += c;
    }
    if (!is_float) {
      int64_t integer = 0;
      const char* first = digits.data() + (digits[0] == '+' ? 1 : 0);
      const auto [end, error] = std::from_chars(first, digits.data() + digits.size(), integer);
      if (error == std::errc() && end == digits.data() + digits.size()) return Json(integer);
    }
    char* end = nullptr;
    const double real = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(real)) {
      return std::nullopt;
    }
    return Json(real);
  }

  std::optional<Json> sequence(char open, char close) {
    consume(open);
    Json array = Json::array();
    while (!consume(close)) {
      std::optional<Json> item = value();
      if (!item) return std::nullopt;
      array.push_back(std::move(*item));
      if (!consume(',') && !peek_is(close)) return std::nullopt;
    }
    return array;
  }

  std::optional<Json> dict() {
    consume('{');
    Json object = Json::object();
    while (!consume('}')) {
      std::optional<Json> key = value();
      if (!key || key->is_object() || key->is_array() || !consume(':')) return std::nullopt;
      std::optional<Json> item = value();
      if (!item) return std::nullopt;
      // JSON keys are strings; Python's json.dumps writes other keys as their JSON text.
      object[key->is_string() ? key->get<std::string>() : compact_json(*key)] = std::move(*item);
      if (!consume(',') && !peek_is('}')) return std::nullopt;
    }
    return object;
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t depth_ = 0;
};

class PythonicFormat : public ToolCallFormat {
 public:
  std::vector<std::string> markers() const override { return {std::string(kStart)}; }
  std::vector<std::string> leading_markers() const override { return {"["}; }

  RegionScan scan(std::string_view region, bool at_end) const override {
    const bool tagged = region.starts_with(kStart);
    const size_t open = tagged ? skip_whitespace(region, kStart.size()) : 0;
    if (open == region.size()) return at_end ? RegionScan::invalid() : RegionScan::need_more();
    // Prose such as "[1] ..." is rejected at once rather than held back until its bracket.
    const size_t first = skip_whitespace(region, open + 1);
    if (region[open] != '[' ||
        (first < region.size() && region[first] != ']' && !is_identifier_start(region[first]))) {
      return RegionScan::invalid();
    }
    const RegionScan list = scan_bracketed(region.substr(open), /*python_strings=*/true);
    if (list.kind != RegionScan::Kind::kEnd) return at_end ? RegionScan::invalid() : list;
    const size_t list_end = open + list.length;
    if (!tagged) return RegionScan::end(list_end);
    const size_t after = skip_whitespace(region, list_end);
    const std::string_view rest = region.substr(after);
    if (rest.starts_with(kEnd)) return RegionScan::end(after + kEnd.size());
    if (!at_end && (rest.empty() || is_proper_prefix(rest, kEnd))) return RegionScan::need_more();
    return RegionScan::end(list_end);
  }

  std::optional<std::vector<ParsedCall>> parse(std::string_view region) const override {
    if (region.starts_with(kStart)) region.remove_prefix(kStart.size());
    while (!region.empty() && is_whitespace(region.back())) region.remove_suffix(1);
    if (region.ends_with(kEnd)) region.remove_suffix(kEnd.size());
    PythonReader reader(region);
    std::optional<std::vector<ParsedCall>> calls = reader.call_list();
    if (!calls || !reader.at_end()) return std::nullopt;
    return calls;
  }

 private:
  static constexpr std::string_view kStart = "<|python_start|>";
  static constexpr std::string_view kEnd = "<|python_end|>";
};

}  // namespace

std::optional<Json> parse_python_literal(std::string_view text) {
  PythonReader reader(text);
  std::optional<Json> value = reader.value();
  if (!value || !reader.at_end()) return std::nullopt;
  return value;
}

std::unique_ptr<ToolCallFormat> make_pythonic_format() {
  return std::make_unique<PythonicFormat>();
}

}  // namespace pagedllm::server::tool_format
