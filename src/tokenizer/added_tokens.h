// Added tokens (special tokens like <|eot_id|> and user-defined ones) are found in the raw text
// before normalization and BPE, leftmost-longest as Hugging Face matches them, so their text
// always becomes their one id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pagedllm {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;  // matched only when special text is parsed; skippable when decoding
  bool lstrip = false;   // swallows whitespace on its left
  bool rstrip = false;   // swallows whitespace on its right
  bool single_word = false;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  struct Segment {
    std::string_view text;  // a run of ordinary text (id < 0) ...
    int32_t id = -1;        // ... or one added token
  };
  // Cuts text into ordinary runs and added tokens. Special tokens count only when
  // parse_special (llama.cpp's parse_special; Hugging Face's split_special_tokens=False).
  std::vector<Segment> split(std::string_view text, bool parse_special) const;

  const AddedToken* find(int32_t id) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::vector<size_t> by_first_byte_[256];  // token indices, longest content first
};

}  // namespace pagedllm
