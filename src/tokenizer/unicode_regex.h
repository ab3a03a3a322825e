// A compiled Unicode regular expression (PCRE2 with UTF and UCP, JIT when available), as the
// pre-tokenizers of byte-level BPE vocabularies need: \p{L}, \p{N}, lookahead.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedllm {

class UnicodeRegex {
 public:
  // Throws std::invalid_argument with PCRE2's message for a pattern it rejects.
  explicit UnicodeRegex(const std::string& pattern);
  ~UnicodeRegex();
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  // Every non-overlapping match, left to right, as [begin, end) byte offsets. Text must be
  // valid UTF-8 (see sanitize_utf8). Empty matches are skipped. Safe to call from many threads.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Replaces every invalid UTF-8 sequence with U+FFFD, as Python's decode(errors="replace") does.
std::string sanitize_utf8(std::string_view text);
bool is_valid_utf8(std::string_view text);

// Length in bytes of the UTF-8 sequence that starts with `lead` (1 for a stray byte).
inline size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

std::string codepoint_to_utf8(uint32_t cp);

}  // namespace pagedllm
