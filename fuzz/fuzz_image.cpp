// libFuzzer target: image decoding (PNG, JPEG, WebP, GIF) and Qwen2-VL preprocessing on
// arbitrary bytes. Only ImageError may come out; the pixel limits keep each input's work small.
#include <cstddef>
#include <cstdint>
#include <span>

#include "multimodal/image.h"
#include "multimodal/qwen2vl_image_processor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm;
  ImageDecodeOptions decode;
  decode.max_pixels = 1 << 20;
  Qwen2VLImageProcessorConfig config;
  config.max_pixels = 64 * 28 * 28;
  try {
    const Image image = decode_image(std::span(data, size), decode);
    if (image.pixels.size() != static_cast<size_t>(image.width) * image.height * image.channels) {
      __builtin_trap();
    }
    const AlphaHandling alpha =
        size % 2 ? AlphaHandling::kDrop : AlphaHandling::kCompositeRgbaOnWhite;
    const ProcessedImage out = qwen2vl_preprocess_image(image, config, {}, alpha);
    if (out.pixel_values.size() != static_cast<size_t>(out.num_patches * out.patch_dim)) {
      __builtin_trap();
    }
  } catch (const ImageError&) {
  }
  return 0;
}
