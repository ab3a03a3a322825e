#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cctype>

#include "chat/jinja_value.h"

namespace pagedllm::jinja {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

struct RawTag {
  Segment::Kind kind;
  bool comment = false;  // kStatement too: comments vanish but control whitespace like blocks
  std::string content;
  bool strip_before = false, strip_after = false;  // "-"
  bool keep_before = false, keep_after = false;    // "+"
  int line = 1;
};

// Removes spaces and tabs that stand alone on the line before a block tag (lstrip_blocks).
void lstrip_line(std::string& text, bool at_template_start) {
  size_t i = text.size();
  while (i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t')) --i;
  if (i == 0 ? at_template_start : text[i - 1] == '\n') text.erase(i);
}

// The closing delimiter of a tag, skipping string literals (a "}}" inside quotes is text).
// Comments are free text, so quotes in them mean nothing.
size_t find_tag_end(const std::string& s, size_t from, const std::string& close, bool comment) {
  if (comment) return s.find(close, from);
  char quote = 0;
  for (size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (s.compare(i, close.size(), close) == 0) {
      return i;
    }
  }
  return std::string::npos;
}

}  // namespace

std::vector<Segment> split_template(const std::string& input) {
  std::string source = input;
  // Jinja2's keep_trailing_newline=False.
  if (!source.empty() && source.back() == '\n') {
    source.pop_back();
    if (!source.empty() && source.back() == '\r') source.pop_back();
  }
  std::vector<std::string> texts(1);
  std::vector<RawTag> tags;
  size_t pos = 0;
  int line = 1;
  size_t counted = 0;  // source[0, counted) holds line - 1 newlines
  while (pos < source.size()) {
    const size_t open = source.find('{', pos);
    if (open == std::string::npos || open + 1 >= source.size()) {
      texts.back() += source.substr(pos);
      break;
    }
    const char kind = source[open + 1];
    if (kind != '{' && kind != '%' && kind != '#') {
      texts.back() += source.substr(pos, open + 2 - pos);
      pos = open + 2;
      continue;
    }
    texts.back() += source.substr(pos, open - pos);
    const std::string close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    size_t inner = open + 2;
    RawTag tag;
    // Lines are counted incrementally: a rescan from the start per tag is quadratic.
    line += static_cast<int>(std::count(source.begin() + static_cast<std::ptrdiff_t>(counted),
                                        source.begin() + static_cast<std::ptrdiff_t>(open), '\n'));
    counted = open;
    tag.line = line;
    tag.comment = kind == '#';
    tag.kind = kind == '{' ? Segment::kExpression : Segment::kStatement;
    if (inner < source.size() && source[inner] == '-')
      tag.strip_before = true, ++inner;
    else if (inner < source.size() && source[inner] == '+')
      tag.keep_before = true, ++inner;
    const size_t end = find_tag_end(source, inner, close, tag.comment);
    if (end == std::string::npos) {
      throw TemplateError("line " + std::to_string(tag.line) + ": unclosed tag");
    }
    size_t content_end = end;
    if (content_end > inner && source[content_end - 1] == '-')
      tag.strip_after = true, --content_end;
    else if (content_end > inner && source[content_end - 1] == '+')
      tag.keep_after = true, --content_end;
    tag.content = source.substr(inner, content_end - inner);
    pos = end + 2;
    // {% raw %}: everything up to {% endraw %} is text.
    std::string trimmed = tag.content;
    trimmed.erase(0, trimmed.find_first_not_of(" \t\n\r"));
    trimmed.erase(trimmed.find_last_not_of(" \t\n\r") + 1);
    if (tag.kind == Segment::kStatement && !tag.comment && trimmed == "raw") {
      size_t search = pos;
      size_t raw_end = std::string::npos, after = 0;
      while ((raw_end = source.find("{%", search)) != std::string::npos) {
        size_t k = raw_end + 2;
        if (k < source.size() && (source[k] == '-' || source[k] == '+')) ++k;
        while (k < source.size() && is_space(source[k])) ++k;
        if (source.compare(k, 6, "endraw") == 0) {
          after = source.find("%}", k);
          break;
        }
        search = raw_end + 2;
      }
      if (raw_end == std::string::npos || after == std::string::npos) {
        throw TemplateError("line " + std::to_string(tag.line) + ": raw without endraw");
      }
      std::string raw = source.substr(pos, raw_end - pos);
      if (tag.strip_after) raw.erase(0, raw.find_first_not_of(" \t\n\r"));
      texts.back() += raw;
      pos = after + 2;
      continue;
    }
    tags.push_back(std::move(tag));
    texts.emplace_back();
  }
  // Whitespace control around each tag: texts[i] precedes tags[i], texts[i + 1] follows it.
  // What a tag strips before it is decided on the untouched text (lstrip_blocks must still see
  // the newline that the previous tag's trim_blocks removes), so that pass comes first.
  for (size_t i = 0; i < tags.size(); ++i) {
    const RawTag& t = tags[i];
    std::string& before = texts[i];
    if (t.strip_before) {
      while (!before.empty() && is_space(before.back())) before.pop_back();
    } else if (t.kind == Segment::kStatement && !t.keep_before) {
      lstrip_line(before, i == 0);
    }
  }
  for (size_t i = 0; i < tags.size(); ++i) {
    const RawTag& t = tags[i];
    std::string& after = texts[i + 1];
    if (t.strip_after) {
      after.erase(0, std::min(after.size(), after.find_first_not_of(" \t\n\r\v\f")));
    } else if (t.kind == Segment::kStatement && !t.keep_after) {
      if (after.compare(0, 2, "\r\n") == 0) {
        after.erase(0, 2);
      } else if (!after.empty() && after[0] == '\n') {
        after.erase(0, 1);
      }
    }
  }
  std::vector<Segment> out;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!texts[i].empty()) out.push_back({Segment::kText, texts[i], 0});
    if (i < tags.size() && !tags[i].comment)
      out.push_back({tags[i].kind, tags[i].content, tags[i].line});
  }
  return out;
}

std::vector<Token> lex_expression(const std::string& s, int line) {
  static const char* const kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*",
                                           "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                           "]",  "{",  "}",  ",",  ".",  ":",  "|"};
  std::vector<Token> tokens;
  size_t i = 0;
  auto fail = [&](const std::string& what) {
    throw TemplateError("line " + std::to_string(line) + ": " + what);
  };
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      tokens.push_back({Token::kName, s.substr(i, j - i)});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      bool is_float = false;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          j = k;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
      }
      std::string text = s.substr(i, j - i);
      text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
      tokens.push_back({is_float ? Token::kFloat : Token::kInt, text});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string value;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          value += s[j];
          continue;
        }
        const char e = s[++j];
        switch (e) {
          case 'n':
            value += '\n';
            break;
          case 't':
            value += '\t';
            break;
          case 'r':
            value += '\r';
            break;
          case '\\':
            value += '\\';
            break;
          case '\'':
            value += '\'';
            break;
          case '"':
            value += '"';
            break;
          case '\n':
            break;
          default:
            value += '\\';
            value += e;
        }
      }
      if (j >= s.size()) fail("unterminated string");
      tokens.push_back({Token::kString, value});
      i = j + 1;
    } else {
      bool matched = false;
      for (const char* op : kOperators) {
        const size_t n = std::char_traits<char>::length(op);
        if (s.compare(i, n, op) == 0) {
          tokens.push_back({Token::kOperator, op});
          i += n;
          matched = true;
          break;
        }
      }
      if (!matched) fail(std::string("unexpected character '") + c + "'");
    }
  }
  tokens.push_back({Token::kEnd, ""});
  return tokens;
}

}  // namespace pagedllm::jinja
