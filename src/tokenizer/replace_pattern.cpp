#include "tokenizer/replace_pattern.h"

#include <cctype>
#include <nlohmann/json.hpp>

namespace pagedllm {

ReplacePattern::ReplacePattern(const nlohmann::json& spec)
    : content_(spec.at("content").get<std::string>()) {
  const auto& pattern = spec.at("pattern");
  if (pattern.contains("Regex")) {
    regex_ = std::make_unique<UnicodeRegex>(pattern.at("Regex").get<std::string>());
  } else {
    literal_ = pattern.at("String").get<std::string>();
    if (literal_.empty()) throw std::invalid_argument("Replace with an empty pattern");
  }
}

std::string ReplacePattern::apply(std::string_view text) const {
  std::string out;
  size_t last = 0;
  if (regex_) {
    for (const auto& [b, e] : regex_->find_all(text)) {
      out.append(text, last, b - last);
      out += content_;
      last = e;
    }
  } else {
    for (size_t at = text.find(literal_); at != std::string_view::npos;
         at = text.find(literal_, last)) {
      out.append(text, last, at - last);
      out += content_;
      last = at + literal_.size();
    }
  }
  out.append(text, last, std::string_view::npos);
  return out;
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != ' ') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace pagedllm
