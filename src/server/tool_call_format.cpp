// The text helpers the tool-call formats share, and the ids they make.
#include "server/tool_call_format.h"

#include <random>

#include "server/tool_call_parser.h"

namespace pagedllm::server::tool_format {

std::string random_alphanumerics(size_t count) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string out(count, ' ');
  for (char& c : out) c = kAlphabet[pick(rng)];
  return out;
}

bool is_whitespace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

size_t skip_whitespace(std::string_view text, size_t pos) {
  while (pos < text.size() && is_whitespace(text[pos])) ++pos;
  return pos;
}

std::string_view trim_whitespace(std::string_view text) {
  const size_t begin = skip_whitespace(text, 0);
  size_t end = text.size();
  while (end > begin && is_whitespace(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

bool is_proper_prefix(std::string_view text, std::string_view word) {
  return text.size() < word.size() && word.starts_with(text);
}

namespace {

// The end of the JSON string whose opening quote is at text[open], or npos while unterminated.
size_t skip_json_string(std::string_view text, size_t open) {
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The end of the Python string (', ", or tripled) whose quote is at text[open], or npos while
// unterminated or while it cannot yet tell an empty string from a triple quote.
size_t skip_python_string(std::string_view text, size_t open) {
  const char quote = text[open];
  const std::string triple(3, quote);
  if (text.substr(open).size() < 3 && text.substr(open).find_first_not_of(quote) == text.npos) {
    return std::string_view::npos;
  }
  const bool is_triple = text.substr(open, 3) == triple;
  for (size_t i = open + (is_triple ? 3 : 1); i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (!is_triple && text[i] == quote) {
      return i + 1;
    } else if (is_triple && text.substr(i, 3) == triple) {
      return i + 3;
    }
  }
  return std::string_view::npos;
}

}  // namespace

RegionScan scan_bracketed(std::string_view text, bool python_strings) {
  std::string closers;  // the closing brackets expected, innermost last
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' || (python_strings && c == '\'')) {
      i = python_strings ? skip_python_string(text, i) : skip_json_string(text, i);
      if (i == std::string_view::npos) return RegionScan::need_more();
      continue;
    }
    if (c == '{' || c == '[' || (python_strings && c == '(')) {
      if (closers.size() == kMaxNesting) return RegionScan::invalid();
      closers.push_back(c == '{' ? '}' : c == '[' ? ']' : ')');
    } else if (c == '}' || c == ']' || (python_strings && c == ')')) {
      if (closers.empty() || closers.back() != c) return RegionScan::invalid();
      closers.pop_back();
      if (closers.empty()) return RegionScan::end(i + 1);
    } else if (closers.empty()) {
      return RegionScan::invalid();  // the value must open with a bracket
    }
    ++i;
  }
  return RegionScan::need_more();
}

std::string ToolCallFormat::make_default_id() const {
  return random_tool_call_id();
}

std::string mistral_tool_call_id() {
  return random_alphanumerics(9);
}

}  // namespace pagedllm::server::tool_format
