#include "chat/jinja_strings.h"

#include <utf8proc.h>

namespace pagedllm::jinja {

namespace {

template <typename F>
std::string map_codepoints(const std::string& s, F f) {
  std::string out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  size_t index = 0;
  while (left > 0) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {  // invalid byte: keep it
      out += static_cast<char>(*p);
      n = 1;
    } else {
      utf8proc_uint8_t buf[4];
      const utf8proc_ssize_t w = utf8proc_encode_char(f(cp, index), buf);
      out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(w));
    }
    p += n;
    left -= n;
    ++index;
  }
  return out;
}

bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

std::string to_upper(const std::string& s) {
  return map_codepoints(s, [](int32_t cp, size_t) { return utf8proc_toupper(cp); });
}
std::string to_lower(const std::string& s) {
  return map_codepoints(s, [](int32_t cp, size_t) { return utf8proc_tolower(cp); });
}

std::string to_title(const std::string& s) {
  bool previous_cased = false;
  return map_codepoints(s, [&](int32_t cp, size_t) {
    const auto cat = utf8proc_category(cp);
    const bool cased =
        cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
    const int32_t r = cased ? (previous_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp)) : cp;
    previous_cased = cased;
    return r;
  });
}

std::string capitalize(const std::string& s) {
  return map_codepoints(
      s, [](int32_t cp, size_t i) { return i == 0 ? utf8proc_totitle(cp) : utf8proc_tolower(cp); });
}

std::string strip_chars(const std::string& s, const Value* chars, bool left, bool right) {
  const bool whitespace = !chars || chars->is_none() || chars->is_undefined();
  const std::string set = whitespace ? "" : chars->str();
  auto strip = [&](char c) {
    return whitespace ? is_py_space(c) : set.find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && strip(s[b])) ++b;
  }
  if (right) {
    while (e > b && strip(s[e - 1])) --e;
  }
  return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s, const Value* sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (!sep || sep->is_none() || sep->is_undefined()) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        std::string rest = s.substr(i);
        while (!rest.empty() && is_py_space(rest.back())) rest.pop_back();
        parts.push_back(rest);
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_py_space(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  const std::string delim = sep->str();
  if (delim.empty()) throw TemplateError("empty separator");
  size_t start = 0;
  for (size_t at = s.find(delim); at != std::string::npos; at = s.find(delim, start)) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delim.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between characters
    out = to;
    for (char c : s) out += std::string(1, c) + to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  for (size_t at = s.find(from); at != std::string::npos && (count < 0 || done < count);
       at = s.find(from, start), ++done) {
    out.append(s, start, at - start);
    out += to;
    start = at + from.size();
  }
  out.append(s, start, std::string::npos);
  return out;
}

size_t codepoint_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string python_format(const std::string& fmt, const Arguments& args) {
  std::string out;
  size_t next_auto = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = fmt.find('}', i);
      if (close == std::string::npos) throw TemplateError("unmatched '{' in format string");
      std::string field = fmt.substr(i + 1, close - i - 1);
      field = field.substr(0, field.find(':'));
      const Value* v = nullptr;
      if (field.empty()) {
        v = args.get(next_auto++, "");
      } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
        v = args.get(static_cast<size_t>(std::stoul(field)), "");
      } else {
        v = args.get(SIZE_MAX, field.c_str());
      }
      if (!v) throw TemplateError("format field '" + field + "' has no value");
      out += v->str();
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

std::string percent_format(const std::string& fmt, const Array& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out += fmt[i];
      continue;
    }
    const char spec = fmt[++i];
    if (spec == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) throw TemplateError("not enough arguments for format string");
    const Value& v = args[next++];
    if (spec == 'd' || spec == 'i') {
      out += std::to_string(v.as_int());
    } else if (spec == 'r') {
      out += v.repr();
    } else {
      out += v.str();
    }
  }
  return out;
}

}  // namespace pagedllm::jinja
