// The {"pattern": {"String"|"Regex": ...}, "content": ...} replacement that tokenizer.json's
// Replace normalizer and Replace decoder share.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/unicode_regex.h"

namespace pagedllm {

class ReplacePattern {
 public:
  explicit ReplacePattern(const nlohmann::json& spec);
  std::string apply(std::string_view text) const;

 private:
  std::string literal_;
  std::unique_ptr<UnicodeRegex> regex_;
  std::string content_;
};

// Escapes every ASCII punctuation character so a literal string can be used as a pattern.
std::string regex_escape(std::string_view literal);

}  // namespace pagedllm
