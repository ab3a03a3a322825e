#include "multimodal/data_url.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace pagedllm {

namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Each byte's 6-bit value, or -1 outside the alphabet.
std::array<int8_t, 256> alphabet_values() {
  std::array<int8_t, 256> values;
  values.fill(-1);
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    values[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  return values;
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

}  // namespace

std::vector<uint8_t> decode_base64(std::string_view text, size_t max_bytes) {
  static const std::array<int8_t, 256> kValues = alphabet_values();
  if (text.size() % 4 != 0) throw ImageError("data URL: base64 length is not a multiple of 4");
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  const size_t size = text.size() / 4 * 3 - padding;
  if (size > max_bytes) {
    throw ImageError("data URL: " + std::to_string(size) + " bytes of data exceed the limit of " +
                     std::to_string(max_bytes));
  }
  std::vector<uint8_t> out;
  out.reserve(size);
  uint32_t bits = 0;
  for (size_t i = 0; i < text.size() - padding; ++i) {
    const int8_t v = kValues[static_cast<uint8_t>(text[i])];
    if (v < 0) {
      throw ImageError("data URL: invalid base64 character at offset " + std::to_string(i));
    }
    bits = bits << 6 | static_cast<uint32_t>(v);
    if (i % 4 == 3) {
      out.push_back(static_cast<uint8_t>(bits >> 16));
      out.push_back(static_cast<uint8_t>(bits >> 8));
      out.push_back(static_cast<uint8_t>(bits));
      bits = 0;
    }
  }
  // The last quantum: 2 characters give 1 byte, 3 give 2.
  if (padding == 2) out.push_back(static_cast<uint8_t>(bits >> 4));
  if (padding == 1) {
    out.push_back(static_cast<uint8_t>(bits >> 10));
    out.push_back(static_cast<uint8_t>(bits >> 2));
  }
  return out;
}

DataUrl parse_data_url(std::string_view url, size_t max_bytes) {
  if (!starts_with_ignoring_case(url, "data:")) throw ImageError("not a data URL");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) throw ImageError("data URL: no ',' before the data");
  std::string_view header = url.substr(5, comma - 5);
  constexpr std::string_view kBase64 = ";base64";
  if (header.size() < kBase64.size() ||
      !starts_with_ignoring_case(header.substr(header.size() - kBase64.size()), kBase64)) {
    throw ImageError("data URL: only base64 data is supported");
  }
  header.remove_suffix(kBase64.size());
  DataUrl out;
  out.media_type = std::string(header.substr(0, header.find(';')));
  // Four characters carry three bytes: refuse an oversized payload before decoding it.
  const std::string_view payload = url.substr(comma + 1);
  if (payload.size() / 4 * 3 > max_bytes + 2) {
    throw ImageError("data URL: about " + std::to_string(payload.size() / 4 * 3) +
                     " bytes of data exceed the limit of " + std::to_string(max_bytes));
  }
  out.data = decode_base64(payload, max_bytes);
  return out;
}

}  // namespace pagedllm
