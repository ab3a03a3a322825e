#include "multimodal/image.h"

#include <cstring>
#include <limits>
#include <string>

namespace pagedllm {

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic, size_t at = 0) {
  return bytes.size() >= at + magic.size() &&
         std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
}

// PIL's DIV255 rounding of a / 255 for a in [0, 255 * 255].
uint8_t div255(int a) {
  const int t = a + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

}  // namespace

ImageFormat sniff_image_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return ImageFormat::kPng;
  if (starts_with(bytes, "\xff\xd8\xff")) return ImageFormat::kJpeg;
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return ImageFormat::kWebp;
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return ImageFormat::kGif;
  return ImageFormat::kUnknown;
}

std::string_view image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kGif:
      return "GIF";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

Image::Image(int width, int height, int channels)
    : width(width), height(height), channels(channels) {
  if (width <= 0 || height <= 0 || channels < 1 || channels > 4) {
    throw ImageError("image: invalid size " + std::to_string(width) + "x" + std::to_string(height) +
                     "x" + std::to_string(channels));
  }
  pixels.assign(static_cast<size_t>(width) * height * channels, 0);
}

void check_image_size(int64_t width, int64_t height, int64_t max_pixels, std::string_view what) {
  if (width <= 0 || height <= 0) {
    throw ImageError(std::string(what) + ": invalid image size " + std::to_string(width) + "x" +
                     std::to_string(height));
  }
  // Both fit in 32 bits in every format read here, so the product cannot overflow.
  if (width > std::numeric_limits<int32_t>::max() || height > std::numeric_limits<int32_t>::max() ||
      width * height > max_pixels) {
    throw ImageError(std::string(what) + ": image of " + std::to_string(width) + "x" +
                     std::to_string(height) + " pixels exceeds the limit of " +
                     std::to_string(max_pixels) + " pixels");
  }
}

Image decode_image(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  if (bytes.empty()) throw ImageError("image: empty data");
  switch (sniff_image_format(bytes)) {
    case ImageFormat::kPng:
      return decode_png(bytes, options);
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, options);
    case ImageFormat::kWebp:
      return decode_webp(bytes, options);
    case ImageFormat::kGif:
      return decode_gif(bytes, options);
    case ImageFormat::kUnknown:
      break;
  }
  throw ImageError("image: unsupported format (expected PNG, JPEG, WebP or GIF)");
}

Image convert_to_rgb(const Image& image, AlphaHandling alpha) {
  if (image.channels == 3) return image;
  Image rgb(image.width, image.height, 3);
  const size_t n = static_cast<size_t>(image.width) * image.height;
  const uint8_t* in = image.pixels.data();
  uint8_t* out = rgb.pixels.data();
  const int c = image.channels;
  for (size_t i = 0; i < n; ++i, in += c, out += 3) {
    if (c <= 2) {
      out[0] = out[1] = out[2] = in[0];
    } else if (alpha == AlphaHandling::kCompositeRgbaOnWhite) {
      const int a = in[3];
      for (int k = 0; k < 3; ++k) out[k] = div255(255 * (255 - a) + in[k] * a);
    } else {
      out[0] = in[0], out[1] = in[1], out[2] = in[2];
    }
  }
  return rgb;
}

}  // namespace pagedllm
