#include "structured/regex_compiler.h"

#include <cctype>
#include <string>
#include <vector>

namespace pagedllm::structured {

namespace {

constexpr int32_t kMaxRepeat = 10000;
constexpr int kMaxNesting = 200;  // recursion stays far from the stack's end

CodePointSet set_of(std::initializer_list<std::pair<uint32_t, uint32_t>> ranges) {
  CodePointSet s;
  for (auto [lo, hi] : ranges) s.add(lo, hi);
  return s;
}

CodePointSet digits() {
  return set_of({{'0', '9'}});
}
CodePointSet word_chars() {
  return set_of({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
}
CodePointSet space_chars() {
  return set_of({{'\t', '\r'},
                 {' ', ' '},
                 {0xA0, 0xA0},
                 {0x1680, 0x1680},
                 {0x2000, 0x200A},
                 {0x2028, 0x2029},
                 {0x202F, 0x202F},
                 {0x205F, 0x205F},
                 {0x3000, 0x3000},
                 {0xFEFF, 0xFEFF}});
}

class RegexParser {
 public:
  RegexParser(Grammar& g, std::string_view text, RegexMode mode)
      : g_(g), text_(text), mode_(mode) {}

  int32_t parse_top() {
    std::vector<int32_t> branches;
    do {
      bool anchored_start = eat('^');
      std::vector<int32_t> items = parse_sequence(/*top=*/true);
      bool anchored_end = false;
      if (eat('$')) anchored_end = true;
      if (pos_ < text_.size() && peek() == ')') fail("unexpected ')'");
      if (pos_ < text_.size() && peek() != '|') fail("unexpected character");
      if (mode_.search && !anchored_start) items.insert(items.begin(), any_text());
      if (mode_.search && !anchored_end) items.push_back(any_text());
      branches.push_back(g_.seq(std::move(items)));
    } while (eat('|'));
    if (pos_ != text_.size()) fail("unexpected ')'");
    return g_.alt(std::move(branches));
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw GrammarError("regex: " + what + " at offset " + std::to_string(pos_));
  }
  // Past the end is an error, never a read: a check forgotten by a caller stays safe.
  char peek() const {
    if (pos_ >= text_.size()) throw GrammarError("regex: unexpected end of the pattern");
    return text_[pos_];
  }
  bool at_end() const { return pos_ >= text_.size(); }
  bool eat(char c) {
    if (!at_end() && peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  int32_t any_text() {
    if (mode_.json_string) return g_.json_chars(0, -1);
    return g_.repeat(g_.chars(set_of({{0, 0x10FFFF}})), 0, -1);
  }

  int32_t parse_alternation() {
    std::vector<int32_t> branches;
    do {
      branches.push_back(g_.seq(parse_sequence(/*top=*/false)));
    } while (eat('|'));
    return g_.alt(std::move(branches));
  }

  std::vector<int32_t> parse_sequence(bool top) {
    std::vector<int32_t> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        if (top && pos_ + 1 == text_.size()) break;
        if (top && text_[pos_ + 1] == '|') break;
        fail("'$' is only supported at the end of the pattern");
      }
      if (peek() == '^') fail("'^' is only supported at the start of the pattern");
      int32_t atom = parse_atom();
      items.push_back(parse_quantifiers(atom));
    }
    return items;
  }

  int32_t parse_quantifiers(int32_t atom) {
    while (!at_end()) {
      int32_t min = 0, max = -1;
      const char c = peek();
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        ++pos_;
        min = 1;
      } else if (c == '?') {
        ++pos_;
        max = 1;
      } else if (c == '{' && parse_braces(min, max)) {
      } else {
        break;
      }
      eat('?');  // lazy: the same language
      if (!at_end() && peek() == '+') fail("possessive quantifiers are not supported");
      atom = g_.repeat(atom, min, max);
    }
    return atom;
  }

  // {n}, {n,}, {n,m}; false (nothing consumed) when it is a literal '{'.
  bool parse_braces(int32_t& min, int32_t& max) {
    size_t p = pos_ + 1;
    const auto number = [&](int32_t& out) {
      const size_t begin = p;
      int64_t v = 0;
      while (p < text_.size() && text_[p] >= '0' && text_[p] <= '9') {
        v = std::min<int64_t>(v * 10 + (text_[p] - '0'), 1 << 30);
        ++p;
      }
      out = static_cast<int32_t>(v);
      return p > begin;
    };
    if (!number(min)) return false;
    max = min;
    if (p < text_.size() && text_[p] == ',') {
      ++p;
      if (!number(max)) max = -1;
    }
    if (p >= text_.size() || text_[p] != '}') return false;
    pos_ = p + 1;
    if (min > kMaxRepeat || max > kMaxRepeat) fail("repetition count over 10000");
    if (max >= 0 && max < min) fail("repetition {n,m} with m < n");
    return true;
  }

  int32_t parse_atom() {
    const char c = peek();
    ++pos_;
    switch (c) {
      case '(':
        return parse_group();
      case '[':
        return char_set(parse_class());
      case '.':
        return char_set(set_of({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}).complement());
      case '\\':
        return parse_escape_atom();
      case '*':
      case '+':
      case '?':
        fail("nothing to repeat");
      default:
        break;
    }
    --pos_;
    const int32_t cp = next_utf8(text_, pos_);
    if (cp < 0) fail("invalid UTF-8");
    return char_set(set_of({{static_cast<uint32_t>(cp), static_cast<uint32_t>(cp)}}));
  }

  int32_t parse_group() {
    if (eat('?')) {
      if (eat(':')) {
      } else if (eat('P') || peek() == '<') {
        if (!eat('<')) fail("unsupported group");
        if (!at_end() && (peek() == '=' || peek() == '!')) fail("lookbehind is not supported");
        while (!at_end() && peek() != '>') ++pos_;
        if (!eat('>')) fail("unterminated group name");
      } else if (!at_end() && (peek() == '=' || peek() == '!')) {
        fail("lookahead is not supported");
      } else {
        fail("unsupported group");
      }
    }
    if (++nesting_ > kMaxNesting) fail("groups nested over 200 deep");
    const int32_t inner = parse_alternation();
    --nesting_;
    if (!eat(')')) fail("missing ')'");
    return inner;
  }

  int32_t char_set(const CodePointSet& set) { return add_char_set(g_, set, mode_.json_string); }

  uint32_t hex_digits(size_t count) {
    uint32_t v = 0;
    for (size_t i = 0; i < count; ++i) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) fail("bad hex escape");
      const char h = peek();
      v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      ++pos_;
    }
    return v;
  }

  // After '\': a class escape (\d, \w, \s and negations) or one code point.
  bool parse_escape(CodePointSet& out) {
    if (at_end()) fail("trailing backslash");
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'd':
        out = digits();
        return true;
      case 'D':
        out = digits().complement();
        return true;
      case 'w':
        out = word_chars();
        return true;
      case 'W':
        out = word_chars().complement();
        return true;
      case 's':
        out = space_chars();
        return true;
      case 'S':
        out = space_chars().complement();
        return true;
      case 'n':
        out = set_of({{'\n', '\n'}});
        return false;
      case 'r':
        out = set_of({{'\r', '\r'}});
        return false;
      case 't':
        out = set_of({{'\t', '\t'}});
        return false;
      case 'f':
        out = set_of({{'\f', '\f'}});
        return false;
      case 'v':
        out = set_of({{'\v', '\v'}});
        return false;
      case '0':
        out = set_of({{0, 0}});
        return false;
      case 'x': {
        const uint32_t v = hex_digits(2);
        out = set_of({{v, v}});
        return false;
      }
      case 'u': {
        uint32_t v;
        if (eat('{')) {
          v = 0;
          size_t n = 0;
          while (!at_end() && peek() != '}' && n++ < 6) v = v * 16 + hex_digits(1);
          if (!eat('}') || v > 0x10FFFF) fail("bad \\u{...} escape");
        } else {
          v = hex_digits(4);
        }
        out = set_of({{v, v}});
        return false;
      }
      case 'p':
      case 'P':
        fail("Unicode property classes are not supported");
      case 'b':
      case 'B':
        fail("word boundaries are not supported");
      default:
        if (c >= '1' && c <= '9') fail("backreferences are not supported");
        if (std::isalnum(static_cast<unsigned char>(c))) fail(std::string("unknown escape \\") + c);
        out = set_of({{static_cast<uint8_t>(c), static_cast<uint8_t>(c)}});
        return false;
    }
  }

  int32_t parse_escape_atom() {
    CodePointSet set;
    parse_escape(set);
    return char_set(set);
  }

  CodePointSet parse_class() {
    const bool negate = eat('^');
    CodePointSet set;
    bool first = true;
    while (!at_end() && (peek() != ']' || first)) {
      first = false;
      CodePointSet lo_set;
      bool is_class = false;
      uint32_t lo = 0;
      if (eat('\\')) {
        is_class = parse_escape(lo_set);
        if (!is_class) lo = lo_set.ranges()[0].lo;
      } else {
        const int32_t cp = next_utf8(text_, pos_);
        if (cp < 0) fail("invalid UTF-8");
        lo = static_cast<uint32_t>(cp);
      }
      if (is_class) {
        set.add(lo_set);
        continue;
      }
      if (pos_ + 1 < text_.size() && peek() == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi;
        if (eat('\\')) {
          CodePointSet hi_set;
          if (parse_escape(hi_set)) fail("a class escape cannot end a range");
          hi = hi_set.ranges()[0].lo;
        } else {
          const int32_t cp = next_utf8(text_, pos_);
          if (cp < 0) fail("invalid UTF-8");
          hi = static_cast<uint32_t>(cp);
        }
        if (hi < lo) fail("range out of order");
        set.add(lo, hi);
      } else {
        set.add(lo, lo);
      }
    }
    if (!eat(']')) fail("missing ']'");
    return negate ? set.complement() : set;
  }

  Grammar& g_;
  std::string_view text_;
  RegexMode mode_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

// The top-level alternatives of a pattern, split at '|' outside groups and classes; empty when
// the pattern is unbalanced (the parser then reports it).
std::vector<std::string_view> top_branches(std::string_view p) {
  std::vector<std::string_view> out;
  int depth = 0;
  bool in_class = false;
  size_t begin = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth < 0) return {};
    } else if (c == '|' && depth == 0) {
      out.push_back(p.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  if (depth != 0 || in_class) return {};
  out.push_back(p.substr(begin));
  return out;
}

// A branch that is one plain group, "(X)" or "(?:X)", stands for X's alternatives in its place:
// written out that way, anchors inside it ("(^a$)|(^b$)") come to the ends of branches, where
// the parser supports them.
std::string unwrap_groups(std::string_view pattern) {
  std::vector<std::string_view> branches = top_branches(pattern);
  if (branches.empty()) return std::string(pattern);
  std::string out;
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::string_view b = branches[i];
    std::string piece(b);
    const size_t skip = b.rfind("(?:", 0) == 0 ? 3 : b.rfind("(?", 0) == 0 ? 0 : 1;
    if (skip > 0 && b.size() >= skip + 1 && b.front() == '(' && b.back() == ')') {
      // The closing paren must be the one matching the first: the inside is balanced.
      const std::string_view inside = b.substr(skip, b.size() - skip - 1);
      if (!top_branches(inside).empty()) piece = unwrap_groups(inside);
    }
    if (i > 0) out += '|';
    out += piece;
  }
  return out;
}

}  // namespace

int32_t add_char_set(Grammar& g, const CodePointSet& set, bool json_string) {
  if (!json_string) return g.chars(set);
  CodePointSet must_escape = set_of({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  std::vector<int32_t> alts;
  CodePointSet raw = set.minus(must_escape);
  if (!raw.empty()) alts.push_back(g.chars(raw));
  for (const CodePointRange& r : set.ranges()) {
    for (uint32_t cp = r.lo; cp <= r.hi && cp < 0x20; ++cp) {
      static const char* kShort[] = {"u0000", "u0001", "u0002", "u0003", "u0004", "u0005",
                                     "u0006", "u0007", "b",     "t",     "n",     "u000b",
                                     "f",     "r",     "u000e", "u000f"};
      if (cp < 16) {
        alts.push_back(g.literal(std::string("\\") + kShort[cp]));
      } else {
        const char hex[] = "0123456789abcdef";
        alts.push_back(g.literal(std::string("\\u001") + hex[cp - 16]));
      }
    }
  }
  if (set.contains('"')) alts.push_back(g.literal("\\\""));
  if (set.contains('\\')) alts.push_back(g.literal("\\\\"));
  return g.alt(std::move(alts));
}

int32_t add_regex(Grammar& g, std::string_view pattern, RegexMode mode) {
  const std::string unwrapped = unwrap_groups(pattern);
  return RegexParser(g, unwrapped, mode).parse_top();
}

Grammar grammar_from_regex(std::string_view pattern) {
  Grammar g;
  const int32_t body = add_regex(g, pattern);
  g.set_start(g.add_rule("regex", body));
  return g;
}

}  // namespace pagedllm::structured
