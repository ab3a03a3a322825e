// Shared by the grammar compiler fuzz targets: runs a compiled grammar's matcher over a small
// vocabulary, checking that every token the mask allows is accepted and the rest refused.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "structured/matcher.h"

namespace pagedllm::structured::fuzz {

inline std::shared_ptr<const TokenVocabulary> small_vocabulary() {
  static auto vocab = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
    for (const char* s : {"{\"", "\":", "\",\"", "true", "null", "abc", "\xC3\xA9", "12", " \"",
                          "\\n", "\xE6\x9D\xB1\xE4\xBA\xAC"}) {
      bytes.push_back(s);
    }
    bytes.push_back("");  // the stop token
    const auto stop = static_cast<int32_t>(bytes.size() - 1);
    return std::make_shared<const TokenVocabulary>(bytes, std::vector<uint8_t>(bytes.size(), 0),
                                                   std::vector<int32_t>{stop});
  }();
  return vocab;
}

// Walks up to 24 tokens, each the `choice`-th allowed one; aborts on a mask/accept mismatch.
inline void exercise_matcher(const std::shared_ptr<const CompiledGrammar>& grammar,
                             uint32_t choice) {
  const auto vocab = small_vocabulary();
  GrammarMatcher matcher(std::make_shared<const TokenGrammar>(grammar, vocab));
  std::vector<uint32_t> mask(vocab->mask_words());
  for (int step = 0; step < 24 && !matcher.is_terminated(); ++step) {
    matcher.fill_next_token_bitmask(mask.data());
    std::vector<int32_t> allowed;
    for (size_t i = 0; i < vocab->size(); ++i) {
      const bool bit = (mask[i / 32] >> (i % 32)) & 1u;
      if (bit) allowed.push_back(static_cast<int32_t>(i));
      // A refused single byte must be refused by accept_token too.
      if (!bit && i < 256 && matcher.accept_token(static_cast<int32_t>(i))) std::abort();
    }
    if (allowed.empty()) return;
    const int32_t token = allowed[(choice >> (step % 8)) % allowed.size()];
    if (!matcher.accept_token(token)) std::abort();
  }
  matcher.rollback(3);
}

}  // namespace pagedllm::structured::fuzz
