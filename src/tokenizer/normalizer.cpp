#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "tokenizer/replace_pattern.h"
#include "tokenizer/unicode_regex.h"

namespace pagedllm {

std::string unicode_normalize(std::string_view text, UnicodeForm form) {
  // Pure ASCII is already in every normal form.
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  int options = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeForm::kNFC:
      options |= UTF8PROC_COMPOSE;
      break;
    case UnicodeForm::kNFD:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case UnicodeForm::kNFKC:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case UnicodeForm::kNFKD:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  const std::string valid = sanitize_utf8(text);
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
                                          static_cast<utf8proc_ssize_t>(valid.size()), &out,
                                          static_cast<utf8proc_option_t>(options));
  if (n < 0) return valid;
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

namespace {

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(UnicodeForm form) : form_(form) {}
  std::string normalize(std::string_view text) const override {
    return unicode_normalize(text, form_);
  }

 private:
  UnicodeForm form_;
};

class Lowercase : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override {
    std::string out;
    const std::string valid = sanitize_utf8(text);
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(valid.data());
    utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(valid.size());
    while (left > 0) {
      utf8proc_int32_t cp;
      const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
      if (n <= 0) break;
      out += codepoint_to_utf8(static_cast<uint32_t>(utf8proc_tolower(cp)));
      p += n;
      left -= n;
    }
    return out;
  }
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string_view text) const override {
    if (text.empty()) return {};
    return prefix_ + std::string(text);
  }

 private:
  std::string prefix_;
};

class Replace : public Normalizer {
 public:
  explicit Replace(const nlohmann::json& spec) : pattern_(spec) {}
  std::string normalize(std::string_view text) const override { return pattern_.apply(text); }

 private:
  ReplacePattern pattern_;
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string_view text) const override {
    size_t b = 0, e = text.size();
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    if (left_) {
      while (b < e && space(text[b])) ++b;
    }
    if (right_) {
      while (e > b && space(text[e - 1])) --e;
    }
    return std::string(text.substr(b, e - b));
  }

 private:
  bool left_, right_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string_view text) const override {
    std::string s(text);
    for (const auto& step : steps_) s = step->normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec.at("type").get<std::string>();
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(UnicodeForm::kNFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Prepend") return std::make_unique<Prepend>(spec.at("prepend").get<std::string>());
  if (type == "Replace") return std::make_unique<Replace>(spec);
  if (type == "Strip") {
    return std::make_unique<Strip>(spec.value("strip_left", true), spec.value("strip_right", true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& s : spec.at("normalizers")) {
      if (auto n = make_normalizer(s)) steps.push_back(std::move(n));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  throw std::invalid_argument("unsupported normalizer type '" + type + "'");
}

}  // namespace pagedllm
