// Python's str methods as templates call them (split, strip, title, ...), on UTF-8 strings.
#pragma once

#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace pagedllm::jinja {

std::string to_upper(const std::string& s);
std::string to_lower(const std::string& s);
std::string to_title(const std::string& s);
std::string capitalize(const std::string& s);
std::string strip_chars(const std::string& s, const Value* chars, bool left, bool right);
std::vector<std::string> split(const std::string& s, const Value* sep, int64_t maxsplit);
std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count);
size_t codepoint_count(const std::string& s);
std::string html_escape(const std::string& s);
// "{} {0} {name}".format(...) and "%s %d" % args, for the simple fields templates use.
std::string python_format(const std::string& fmt, const Arguments& args);
std::string percent_format(const std::string& fmt, const Array& args);

}  // namespace pagedllm::jinja
