// Streaming detokenization: text comes out token by token and never as a broken UTF-8
// sequence; bytes of an unfinished character are held back until it completes.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace pagedllm {

class IncrementalDetokenizer {
 public:
  // `previous` is the token before the first one to stream (the prompt's last), or -1.
  IncrementalDetokenizer(const Tokenizer& tokenizer, int32_t previous, bool skip_special = true)
      : tokenizer_(tokenizer), previous_(previous), skip_special_(skip_special) {}

  // Returns the text that became complete with this token (possibly empty).
  std::string push(int32_t token);
  // Returns whatever is still held back (an incomplete sequence at the very end).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  int32_t previous_;
  bool skip_special_;
  std::string pending_;
};

// Length of the longest prefix of s that does not end inside a UTF-8 sequence.
size_t complete_utf8_prefix(const std::string& s);

}  // namespace pagedllm
