// Decoded 8-bit images and their decoding from PNG, JPEG, WebP and GIF bytes with Debian's
// libraries (libpng, libjpeg-turbo, libwebp, giflib), never a hand-written decoder.
//
// Pixels come out as PIL's Image.open gives them to Hugging Face's image processors, so that
// the preprocessing downstream sees the same numbers: palette images are expanded to RGB (a tRNS
// chunk is ignored, as PIL's convert("RGB") ignores it), 16-bit channels keep their high byte
// (16-bit grayscale is clipped to 255, as PIL's mode "I" converts), CMYK JPEGs become RGB with
// PIL's formula, and no EXIF orientation is applied (HF's Qwen2VLImageProcessor and vLLM's image
// loader do not call exif_transpose).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm {

// Bad, truncated, unsupported or too large image bytes: a one-line message naming the problem.
class ImageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class ImageFormat { kUnknown, kPng, kJpeg, kWebp, kGif };

// The format the leading bytes announce (magic numbers), or kUnknown.
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);
std::string_view image_format_name(ImageFormat format);

// Interleaved 8-bit pixels, rows top to bottom. channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA.
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels

  Image() = default;
  Image(int width, int height, int channels);
  uint8_t at(int y, int x, int c) const {
    return pixels[(static_cast<size_t>(y) * width + x) * channels + c];
  }
  uint8_t& at(int y, int x, int c) {
    return pixels[(static_cast<size_t>(y) * width + x) * channels + c];
  }
};

// PIL's Image.MAX_IMAGE_PIXELS: its decompression-bomb warning threshold.
inline constexpr int64_t kDefaultMaxImagePixels = 89'478'485;

struct ImageDecodeOptions {
  // Images whose header announces more pixels (width * height) are refused before any pixel
  // is decoded: a few bytes of compressed data can announce gigabytes of pixels.
  int64_t max_pixels = kDefaultMaxImagePixels;
};

// Decodes PNG, JPEG, WebP or GIF (its first frame) bytes. Throws ImageError on anything else.
Image decode_image(std::span<const uint8_t> bytes, const ImageDecodeOptions& options = {});

// What happens to an alpha channel on the way to RGB.
enum class AlphaHandling {
  // Hugging Face's convert_to_rgb (PIL's convert("RGB")): alpha is discarded, colour kept.
  kDrop,
  // vLLM's image loader (rgba_to_rgb): RGBA is composited over white, as PIL's paste with the
  // alpha as mask rounds it; gray+alpha still drops its alpha there, as PIL's convert does.
  kCompositeRgbaOnWhite,
};

// Three channels, as PIL's convert("RGB") (gray is replicated).
Image convert_to_rgb(const Image& image, AlphaHandling alpha = AlphaHandling::kDrop);

// Throws ImageError unless width, height > 0 and width * height <= max_pixels.
void check_image_size(int64_t width, int64_t height, int64_t max_pixels, std::string_view what);

// Format decoders (image_png.cpp, image_jpeg.cpp, image_webp_gif.cpp); decode_image dispatches.
Image decode_png(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);
Image decode_jpeg(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);
Image decode_webp(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);
Image decode_gif(std::span<const uint8_t> bytes, const ImageDecodeOptions& options);

}  // namespace pagedllm
