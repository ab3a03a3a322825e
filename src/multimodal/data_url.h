// RFC 2397 data URLs, as OpenAI clients send images in image_url parts:
// data:[<media type>][;<parameter>]*;base64,<data>. As in vLLM, only base64 payloads are
// accepted, decoded strictly (the standard alphabet, '=' padding to a multiple of 4, nothing
// else, as Python's b64decode(validate=True)).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "multimodal/image.h"

namespace pagedllm {

struct DataUrl {
  std::string media_type;  // e.g. "image/png"; may be empty (RFC 2397's default)
  std::vector<uint8_t> data;
};

// 20 MiB of decoded bytes by default; the encoded length is checked before decoding.
inline constexpr size_t kDefaultMaxDataUrlBytes = size_t{20} << 20;

// Throws ImageError naming the problem: not a data URL, no comma, not base64, bad base64, or
// more than max_bytes of data.
DataUrl parse_data_url(std::string_view url, size_t max_bytes = kDefaultMaxDataUrlBytes);

// Strict base64 (see above). Throws ImageError.
std::vector<uint8_t> decode_base64(std::string_view text, size_t max_bytes);

}  // namespace pagedllm
