// WebP through libwebp (the first frame of an animation through libwebpdemux) and GIF's first
// frame through giflib; both report errors by return value.
#include <gif_lib.h>
#include <webp/decode.h>
#include <webp/demux.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "multimodal/image.h"

namespace pagedllm {

namespace {

// PIL (through WebPAnimDecoder) gives RGBA when the file declares alpha, RGB otherwise.
Image webp_from_rgba(const uint8_t* rgba, int width, int height, bool has_alpha) {
  Image image(width, height, has_alpha ? 4 : 3);
  const size_t n = static_cast<size_t>(width) * height;
  if (has_alpha) {
    std::memcpy(image.pixels.data(), rgba, n * 4);
  } else {
    for (size_t i = 0; i < n; ++i) std::memcpy(&image.pixels[3 * i], rgba + 4 * i, 3);
  }
  return image;
}

Image decode_animated_webp(std::span<const uint8_t> bytes, bool has_alpha) {
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) throw ImageError("WebP: cannot create a decoder");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  const WebPData data{bytes.data(), bytes.size()};
  std::unique_ptr<WebPAnimDecoder, decltype(&WebPAnimDecoderDelete)> decoder(
      WebPAnimDecoderNew(&data, &options), WebPAnimDecoderDelete);
  WebPAnimInfo info;
  if (!decoder || !WebPAnimDecoderGetInfo(decoder.get(), &info)) {
    throw ImageError("WebP: invalid animation");
  }
  uint8_t* frame = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(decoder.get(), &frame, &timestamp)) {
    throw ImageError("WebP: cannot decode the first frame");
  }
  return webp_from_rgba(frame, static_cast<int>(info.canvas_width),
                        static_cast<int>(info.canvas_height), has_alpha);
}

struct GifSource {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
};

int gif_read_from_memory(GifFileType* gif, GifByteType* out, int size) {
  auto* source = static_cast<GifSource*>(gif->UserData);
  const size_t n =
      std::min(static_cast<size_t>(std::max(size, 0)), source->bytes.size() - source->offset);
  std::memcpy(out, source->bytes.data() + source->offset, n);
  source->offset += n;
  return static_cast<int>(n);
}

[[noreturn]] void gif_fail(int error) {
  const char* text = GifErrorString(error);
  throw ImageError(std::string("GIF: ") + (text ? text : "decoding failed"));
}

// The transparent colour index of a graphic control extension, or -1.
int gif_transparent_index(GifFileType* gif, int code, GifByteType* extension) {
  int transparent = -1;
  if (code == GRAPHICS_EXT_FUNC_CODE && extension && extension[0] >= 4 && (extension[1] & 1)) {
    transparent = extension[4];
  }
  while (extension) {
    if (DGifGetExtensionNext(gif, &extension) == GIF_ERROR) gif_fail(gif->Error);
  }
  return transparent;
}

// The first frame's colour indexes on the screen-sized canvas; PIL fills what the frame does not
// cover with the transparent index, or index 0.
std::vector<uint8_t> gif_first_frame_indexes(GifFileType* gif, int64_t max_pixels,
                                             int& transparent) {
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) gif_fail(gif->Error);
    if (type == TERMINATE_RECORD_TYPE) throw ImageError("GIF: no image in the file");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* extension = nullptr;
      if (DGifGetExtension(gif, &code, &extension) == GIF_ERROR) gif_fail(gif->Error);
      const int index = gif_transparent_index(gif, code, extension);
      if (index >= 0) transparent = index;
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif) == GIF_ERROR) gif_fail(gif->Error);
    const GifImageDesc& desc = gif->Image;
    // The frame is decoded whole even where it leaves the canvas: bound its work too.
    if (desc.Width > 0 && desc.Height > 0) {
      check_image_size(desc.Width, desc.Height, max_pixels, "GIF frame");
    }
    const int width = gif->SWidth, height = gif->SHeight;
    std::vector<uint8_t> canvas(static_cast<size_t>(width) * height,
                                static_cast<uint8_t>(transparent >= 0 ? transparent : 0));
    std::vector<GifPixelType> line(std::max(desc.Width, 1));
    // Interlaced rows arrive in four passes: every 8th from 0, every 8th from 4, every 4th
    // from 2, every 2nd from 1.
    static constexpr int kStart[] = {0, 4, 2, 1}, kStep[] = {8, 8, 4, 2};
    const int passes = desc.Interlace ? 4 : 1;
    for (int pass = 0; pass < passes; ++pass) {
      const int step = desc.Interlace ? kStep[pass] : 1;
      for (int row = desc.Interlace ? kStart[pass] : 0; row < desc.Height; row += step) {
        if (DGifGetLine(gif, line.data(), desc.Width) == GIF_ERROR) gif_fail(gif->Error);
        const int y = desc.Top + row;
        if (y >= height) continue;
        for (int x = 0; x < desc.Width && desc.Left + x < width; ++x) {
          canvas[static_cast<size_t>(y) * width + desc.Left + x] = line[x];
        }
      }
    }
    return canvas;
  }
}

}  // namespace

Image decode_webp(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(bytes.data(), bytes.size(), &features) != VP8_STATUS_OK) {
    throw ImageError("WebP: invalid or truncated header");
  }
  check_image_size(features.width, features.height, options.max_pixels, "WebP");
  if (features.has_animation) return decode_animated_webp(bytes, features.has_alpha);
  int width = 0, height = 0;
  std::unique_ptr<uint8_t, decltype(&WebPFree)> rgba(
      WebPDecodeRGBA(bytes.data(), bytes.size(), &width, &height), WebPFree);
  if (!rgba) throw ImageError("WebP: corrupt or truncated data");
  return webp_from_rgba(rgba.get(), width, height, features.has_alpha);
}

Image decode_gif(std::span<const uint8_t> bytes, const ImageDecodeOptions& options) {
  GifSource source{bytes};
  int error = 0;
  std::unique_ptr<GifFileType, void (*)(GifFileType*)> gif(
      DGifOpen(&source, gif_read_from_memory, &error),
      [](GifFileType* g) { DGifCloseFile(g, nullptr); });
  if (!gif) gif_fail(error);
  check_image_size(gif->SWidth, gif->SHeight, options.max_pixels, "GIF");
  int transparent = -1;
  const std::vector<uint8_t> indexes =
      gif_first_frame_indexes(gif.get(), options.max_pixels, transparent);
  const ColorMapObject* map = gif->Image.ColorMap ? gif->Image.ColorMap : gif->SColorMap;
  Image image(gif->SWidth, gif->SHeight, 3);
  for (size_t i = 0; i < indexes.size(); ++i) {
    // An index past the colour map is black, as in PIL's zero-padded palette.
    if (!map || indexes[i] >= map->ColorCount) continue;
    const GifColorType& color = map->Colors[indexes[i]];
    image.pixels[3 * i] = color.Red;
    image.pixels[3 * i + 1] = color.Green;
    image.pixels[3 * i + 2] = color.Blue;
  }
  return image;
}

}  // namespace pagedllm
