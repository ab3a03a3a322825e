// GPT-2's byte-to-character table: every byte gets a printable Unicode character, so byte-level
// BPE vocabularies store any byte string as text ("Ġ" is the space byte 0x20).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pagedllm {

// Each byte of `bytes` as its character, UTF-8 encoded.
std::string byte_level_encode(std::string_view bytes);
// The inverse; characters outside the table are kept as their own UTF-8 bytes.
std::string byte_level_decode(std::string_view text);

// The byte a byte-fallback token ("<0xAB>") stands for, or -1 for any other piece.
int byte_token_value(std::string_view piece);

}  // namespace pagedllm
