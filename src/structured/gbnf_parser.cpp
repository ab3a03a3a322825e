#include "structured/gbnf_parser.h"

#include <cctype>
#include <map>
#include <string>

namespace pagedllm::structured {

namespace {

constexpr int32_t kMaxRepeat = 10000;
constexpr int kMaxNesting = 200;  // recursion stays far from the stack's end

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse() {
    skip_space(true);
    while (!at_end()) {
      parse_rule();
      skip_space(true);
    }
    for (const Rule& r : g_.rules()) {
      if (r.body < 0) {
        const auto [line, col] = first_use_.at(r.name);
        throw GrammarError("gbnf: " + std::to_string(line) + ":" + std::to_string(col) +
                           ": undefined rule '" + r.name + "'");
      }
    }
    const int32_t root = g_.find_rule("root");
    if (root < 0) throw GrammarError("gbnf: no 'root' rule");
    g_.set_start(root);
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw GrammarError("gbnf: " + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
  }
  std::pair<size_t, size_t> here() const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_; ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return {line, col};
  }
  bool at_end() const { return pos_ >= text_.size(); }
  // Past the end is an error, never a read: a check forgotten by a caller stays safe.
  char peek() const {
    if (pos_ >= text_.size()) throw GrammarError("gbnf: unexpected end of the grammar");
    return text_[pos_];
  }
  static bool is_word(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  }

  // Spaces and comments; newlines too when `newlines` (inside parentheses, after '|').
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t begin = pos_;
    while (!at_end() && is_word(peek())) ++pos_;
    if (pos_ == begin) fail("expected a rule name");
    return std::string(text_.substr(begin, pos_ - begin));
  }

  void parse_rule() {
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const int32_t rule = g_.declare_rule(name);
    if (g_.rules()[static_cast<size_t>(rule)].body >= 0) fail("rule '" + name + "' defined twice");
    g_.define(rule, parse_alternatives(false));
    if (!at_end() && peek() != '\n' && peek() != '\r') fail("unexpected character");
  }

  int32_t parse_alternatives(bool nested) {
    std::vector<int32_t> alts = {parse_sequence(nested)};
    while (!at_end() && peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested));
    }
    return g_.alt(std::move(alts));
  }

  int32_t parse_sequence(bool nested) {
    std::vector<int32_t> items;
    while (!at_end()) {
      const char c = peek();
      if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
      items.push_back(parse_postfix(parse_primary()));
      skip_space(nested);
    }
    return g_.seq(std::move(items));
  }

  int32_t parse_primary() {
    const char c = peek();
    if (c == '"') return parse_literal();
    if (c == '[') return g_.chars(parse_class());
    if (c == '.') {
      ++pos_;
      CodePointSet any;
      any.add(0, 0x10FFFF);
      return g_.chars(any);
    }
    if (c == '(') {
      ++pos_;
      skip_space(true);
      if (++nesting_ > kMaxNesting) fail("parentheses nested over 200 deep");
      const int32_t inner = parse_alternatives(true);
      --nesting_;
      if (at_end() || peek() != ')') fail("expected ')'");
      ++pos_;
      return inner;
    }
    if (is_word(c)) {
      const auto at = here();
      const std::string name = parse_name();
      const int32_t rule = g_.declare_rule(name);
      first_use_.emplace(name, at);
      return g_.ref(rule);
    }
    fail(std::string("unexpected '") + c + "'");
  }

  int32_t parse_postfix(int32_t atom) {
    while (!at_end()) {
      const char c = peek();
      if (c == '*') {
        atom = g_.repeat(atom, 0, -1);
      } else if (c == '+') {
        atom = g_.repeat(atom, 1, -1);
      } else if (c == '?') {
        atom = g_.repeat(atom, 0, 1);
      } else if (c == '{') {
        ++pos_;
        const int32_t min = parse_count();
        int32_t max = min;
        skip_space(false);
        if (!at_end() && peek() == ',') {
          ++pos_;
          skip_space(false);
          max = !at_end() && std::isdigit(static_cast<unsigned char>(peek())) ? parse_count() : -1;
        }
        skip_space(false);
        if (at_end() || peek() != '}') fail("expected '}'");
        if (max >= 0 && max < min) fail("repetition {m,n} with n < m");
        atom = g_.repeat(atom, min, max);
      } else {
        break;
      }
      ++pos_;
    }
    return atom;
  }

  int32_t parse_count() {
    skip_space(false);
    if (at_end() || !std::isdigit(static_cast<unsigned char>(peek()))) fail("expected a number");
    int64_t v = 0;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) fail("repetition count over 10000");
      ++pos_;
    }
    return static_cast<int32_t>(v);
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) fail("bad hex escape");
      const char h = peek();
      v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      ++pos_;
    }
    return v;
  }

  // One (possibly escaped) character of a literal or class.
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of grammar");
    if (peek() != '\\') {
      const int32_t cp = next_utf8(text_, pos_);
      if (cp < 0) fail("invalid UTF-8");
      return static_cast<uint32_t>(cp);
    }
    ++pos_;
    if (at_end()) fail("unexpected end after '\\'");
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'x':
        return parse_hex(2);
      case 'u':
        return parse_hex(4);
      case 'U': {
        const uint32_t v = parse_hex(8);
        if (v > 0x10FFFF) fail("code point out of range");
        return v;
      }
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
        return static_cast<uint8_t>(c);
      default:
        pos_ -= 2;
        fail(std::string("unknown escape '\\") + c + "'");
    }
  }

  int32_t parse_literal() {
    ++pos_;
    std::string bytes;
    while (!at_end() && peek() != '"') {
      if (peek() == '\n') fail("unterminated string");
      append_utf8(bytes, parse_char());
    }
    if (at_end()) fail("unterminated string");
    ++pos_;
    return g_.literal(bytes);
  }

  CodePointSet parse_class() {
    ++pos_;
    const bool negate = !at_end() && peek() == '^';
    if (negate) ++pos_;
    CodePointSet set;
    while (!at_end() && peek() != ']') {
      if (peek() == '\n') fail("unterminated character class");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (pos_ + 1 < text_.size() && peek() == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("character range out of order");
      }
      set.add(lo, hi);
    }
    if (at_end()) fail("unterminated character class");
    ++pos_;
    return negate ? set.complement() : set;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int nesting_ = 0;
  Grammar g_;
  std::map<std::string, std::pair<size_t, size_t>> first_use_;
};

}  // namespace

Grammar grammar_from_gbnf(std::string_view text) {
  return GbnfParser(text).parse();
}

Grammar grammar_from_choices(const std::vector<std::string>& choices) {
  if (choices.empty()) throw GrammarError("choice list is empty");
  Grammar g;
  std::vector<int32_t> alts;
  for (const std::string& c : choices) alts.push_back(g.literal(c));
  g.set_start(g.add_rule("choice", g.alt(std::move(alts))));
  return g;
}

}  // namespace pagedllm::structured
