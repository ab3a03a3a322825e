// PNG through libpng. libpng reports errors by longjmp, so the decoding runs in a function whose
// frame owns nothing that needs a destructor; every C++ object lives in the caller's frame.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "multimodal/image.h"

namespace pagedllm {

namespace {

struct PngSource {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
  char error[160] = "";
};

void png_read_from_memory(png_structp png, png_bytep out, png_size_t size) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (size > source->bytes.size() - source->offset) png_error(png, "truncated data");
  std::memcpy(out, source->bytes.data() + source->offset, size);
  source->offset += size;
}

[[noreturn]] void png_on_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->error, sizeof source->error, "%s", message);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

// What PIL keeps of a PNG: palette expanded without its tRNS, 16-bit samples cut to their high
// byte except plain 16-bit gray (PIL's mode "I", clipped to 255 by convert), and 16-bit
// gray+alpha widened to RGBA as PIL does.
struct PngLayout {
  bool gray16 = false;  // rows hold big-endian 16-bit gray samples
  bool drop_palette_alpha = false;
  int channels = 0;  // per pixel in libpng's rows
};

// The size check may throw ImageError: a C++ throw from this frame, not across libpng.
void read_png_body(png_structp png, png_infop info, const ImageDecodeOptions& options, Image& image,
                   std::vector<uint8_t>& rows, std::vector<png_bytep>& row_pointers,
                   PngLayout& layout) {
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  check_image_size(width, height, options.max_pixels, "PNG");
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  layout.gray16 = color_type == PNG_COLOR_TYPE_GRAY && bit_depth == 16;
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    png_set_palette_to_rgb(png);
    layout.drop_palette_alpha = true;
  }
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (bit_depth == 16 && !layout.gray16) png_set_strip_16(png);
  // PIL reads 16-bit gray+alpha as RGBA (so vLLM composites it where 8-bit LA drops alpha).
  if (color_type == PNG_COLOR_TYPE_GRAY_ALPHA && bit_depth == 16) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  layout.channels = png_get_channels(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  rows.resize(row_bytes * height);
  row_pointers.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) row_pointers[y] = rows.data() + y * row_bytes;
  const int kept = layout.drop_palette_alpha && layout.channels == 4 ? 3 : layout.channels;
  image = Image(static_cast<int>(width), static_cast<int>(height), kept);
  // No png_read_end: what follows the pixels is not needed, and PIL does not read it either.
  png_read_image(png, row_pointers.data());
}

// Returns false after a libpng error (the message is in source.error). The work is in a callee,
// so no local of this frame is live across the longjmp.
bool read_png(png_structp png, png_infop info, const ImageDecodeOptions& options, Image& image,
              std::vector<uint8_t>& rows, std::vector<png_bytep>& row_pointers, PngLayout& layout) {
  if (setjmp(png_jmpbuf(png))) return false;
  read_png_body(png, info, options, image, rows, row_pointers, layout);
  return true;
}

void copy_rows(const PngLayout& layout, const std::vector<uint8_t>& rows, Image& image) {
  const size_t n = static_cast<size_t>(image.width) * image.height;
  if (layout.gray16) {
    for (size_t i = 0; i < n; ++i) {
      const int v = rows[2 * i] << 8 | rows[2 * i + 1];
      image.pixels[i] = static_cast<uint8_t>(v > 255 ? 255 : v);
    }
    return;
  }
  if (image.channels == layout.channels) {
    std::memcpy(image.pixels.data(), rows.data(), image.pixels.size());
    return;
  }
  for (size_t i = 0; i < n; ++i) std::memcpy(&image.pixels[3 * i], &rows[4 * i], 3);
}

}  // namespace

Image decode_png(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  // IHDR must come first: its size is checked before libpng reads further chunks.
  if (bytes.size() >= 24 && std::memcmp(bytes.data() + 12, "IHDR", 4) == 0) {
    const auto be32 = [&](size_t at) {
      return int64_t{bytes[at]} << 24 | bytes[at + 1] << 16 | bytes[at + 2] << 8 | bytes[at + 3];
    };
    check_image_size(be32(16), be32(20), options.max_pixels, "PNG");
  }
  PngSource source{bytes};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_on_error, png_on_warning);
  if (!png) throw ImageError("PNG: cannot create a decoder");
  png_infop info = png_create_info_struct(png);
  struct Destroy {
    png_structp* png;
    png_infop* info;
    ~Destroy() { png_destroy_read_struct(png, info, nullptr); }
  } destroy{&png, &info};
  if (!info) throw ImageError("PNG: cannot create a decoder");
  png_set_read_fn(png, &source, png_read_from_memory);
  Image image;
  std::vector<uint8_t> rows;
  std::vector<png_bytep> row_pointers;
  PngLayout layout;
  if (!read_png(png, info, options, image, rows, row_pointers, layout)) {
    throw ImageError(std::string("PNG: ") + source.error);
  }
  copy_rows(layout, rows, image);
  return image;
}

}  // namespace pagedllm
