// libFuzzer target: data-URL parsing (strict base64) and decoding the image it carries, on
// arbitrary text. Only ImageError may come out.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "multimodal/data_url.h"
#include "multimodal/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm;
  try {
    const DataUrl url =
        parse_data_url(std::string_view(reinterpret_cast<const char*>(data), size), 1 << 18);
    if (url.data.size() > (1 << 18)) __builtin_trap();
    ImageDecodeOptions options;
    options.max_pixels = 1 << 20;
    decode_image(url.data, options);
  } catch (const ImageError&) {
  }
  return 0;
}
