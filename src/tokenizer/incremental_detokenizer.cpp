#include "tokenizer/incremental_detokenizer.h"

namespace pagedllm {

size_t complete_utf8_prefix(const std::string& s) {
  // Look back at most 3 bytes for the lead byte of a sequence that runs past the end.
  const size_t n = s.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    size_t need = 1;
    if ((c & 0xE0) == 0xC0)
      need = 2;
    else if ((c & 0xF0) == 0xE0)
      need = 3;
    else if ((c & 0xF8) == 0xF0)
      need = 4;
    return need > back ? n - back : n;
  }
  return n;  // only continuation bytes: invalid anyway, do not hold them forever
}

std::string IncrementalDetokenizer::push(int32_t token) {
  pending_ += tokenizer_.decode_token(previous_, token, skip_special_);
  previous_ = token;
  const size_t ready = complete_utf8_prefix(pending_);
  std::string out = pending_.substr(0, ready);
  pending_.erase(0, ready);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace pagedllm
