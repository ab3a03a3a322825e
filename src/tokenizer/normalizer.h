// Hugging Face tokenizer.json normalizers: NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace, Strip
// and Sequence. They rewrite a text segment before it is pre-tokenized.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace pagedllm {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view text) const = 0;
};

// Builds the normalizer a tokenizer.json "normalizer" entry describes; nullptr for null.
// Throws std::invalid_argument naming an unsupported type.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec);

enum class UnicodeForm { kNFC, kNFD, kNFKC, kNFKD };
std::string unicode_normalize(std::string_view text, UnicodeForm form);

}  // namespace pagedllm
