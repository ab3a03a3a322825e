#include "tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

#include "tokenizer/unicode_regex.h"

namespace pagedllm {

namespace {

struct ByteTable {
  std::array<std::string, 256> char_of_byte;
  std::unordered_map<uint32_t, uint8_t> byte_of_char;

  ByteTable() {
    // Printable Latin-1 bytes stand for themselves; the rest take U+0100 onwards in order.
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      const uint32_t cp = printable ? b : next++;
      char_of_byte[b] = codepoint_to_utf8(cp);
      byte_of_char[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteTable& table() {
  static const ByteTable t;
  return t;
}

}  // namespace

int byte_token_value(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = piece[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

std::string byte_level_encode(std::string_view bytes) {
  const ByteTable& t = table();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.char_of_byte[static_cast<unsigned char>(c)];
  return out;
}

std::string byte_level_decode(std::string_view text) {
  const ByteTable& t = table();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t n = std::min(utf8_sequence_length(lead), text.size() - i);
    uint32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    auto it = t.byte_of_char.find(cp);
    if (it != t.byte_of_char.end()) {
      out += static_cast<char>(it->second);
    } else {
      out.append(text, i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace pagedllm
