// Decoding and RGB conversion against PIL (Debian's python3-pil links the same libpng,
// libjpeg-turbo and libwebp), and bad bytes refused with an ImageError.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "multimodal/image.h"
#include "multimodal/reference.h"

namespace pagedllm {
namespace {

using test::read_bytes;
using test::reference_dir;
using test::reference_manifest;

Image decode_file(const std::string& path, const ImageDecodeOptions& options = {}) {
  return decode_image(read_bytes(path), options);
}

TEST(ImageDecode, EveryFormatAndModeGivesPilsPixels) {
  const std::string dir = reference_dir("images");
  const auto manifest = reference_manifest("images");
  ASSERT_GE(manifest.size(), 20u);
  for (const auto& entry : manifest) {
    const std::string file = entry["file"];
    SCOPED_TRACE(file + " (PIL mode " + entry["mode"].get<std::string>() + ")");
    const Image image = decode_file(dir + "/" + file);
    EXPECT_EQ(image.width, entry["width"].get<int>());
    EXPECT_EQ(image.height, entry["height"].get<int>());
    EXPECT_EQ(convert_to_rgb(image, AlphaHandling::kDrop).pixels,
              read_bytes(dir + "/" + file + ".drop.rgb"));
    EXPECT_EQ(convert_to_rgb(image, AlphaHandling::kCompositeRgbaOnWhite).pixels,
              read_bytes(dir + "/" + file + ".white.rgb"));
  }
}

TEST(ImageDecode, AlphaIsKeptUntilConversion) {
  const std::string dir = reference_dir("images");
  EXPECT_EQ(decode_file(dir + "/rgba.png").channels, 4);
  EXPECT_EQ(decode_file(dir + "/gray_alpha.png").channels, 2);
  EXPECT_EQ(decode_file(dir + "/alpha.webp").channels, 4);
  EXPECT_EQ(decode_file(dir + "/palette_transparent.png").channels, 3);
  EXPECT_EQ(decode_file(dir + "/gray.jpg").channels, 1);
}

TEST(ImageDecode, SniffsFormatsByTheirMagicBytes) {
  const std::string dir = reference_dir("images");
  EXPECT_EQ(sniff_image_format(read_bytes(dir + "/rgb.png")), ImageFormat::kPng);
  EXPECT_EQ(sniff_image_format(read_bytes(dir + "/rgb.jpg")), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_image_format(read_bytes(dir + "/lossy.webp")), ImageFormat::kWebp);
  EXPECT_EQ(sniff_image_format(read_bytes(dir + "/palette.gif")), ImageFormat::kGif);
  const std::string bmp = "BM\x36\0\0\0";
  EXPECT_EQ(sniff_image_format({reinterpret_cast<const uint8_t*>(bmp.data()), bmp.size()}),
            ImageFormat::kUnknown);
}

void expect_image_error(std::span<const uint8_t> bytes, const std::string& fragment,
                        const ImageDecodeOptions& options = {}) {
  try {
    decode_image(bytes, options);
    ADD_FAILURE() << "decoded, expected an error containing '" << fragment << "'";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ImageDecode, EmptyAndUnknownBytesAreRefused) {
  expect_image_error({}, "empty");
  const std::string text = "this is not an image";
  expect_image_error({reinterpret_cast<const uint8_t*>(text.data()), text.size()},
                     "unsupported format");
}

TEST(ImageDecode, TruncatedFilesAreRefusedNamingTheFormat) {
  const std::string dir = reference_dir("images");
  for (const char* file : {"rgb.png", "interlaced.png", "rgb.jpg", "progressive.jpg", "lossy.webp",
                           "lossless.webp", "palette.gif", "animated.webp"}) {
    SCOPED_TRACE(file);
    const std::vector<uint8_t> bytes = read_bytes(dir + "/" + file);
    const std::string format(image_format_name(sniff_image_format(bytes)));
    // Cut inside the pixel data, and just after the signature.
    expect_image_error(std::span(bytes).first(bytes.size() / 2), format + ":");
    expect_image_error(std::span(bytes).first(12), format + ":");
  }
}

TEST(ImageDecode, EveryPrefixOfEachFileDecodesOrFailsCleanly) {
  const std::string dir = reference_dir("images");
  for (const char* file : {"rgba.png", "gray16.png", "cmyk.jpg", "alpha.webp", "transparent.gif"}) {
    const std::vector<uint8_t> bytes = read_bytes(dir + "/" + file);
    for (size_t n = 0; n < bytes.size(); n += 7) {
      try {
        const Image image = decode_image(std::span(bytes).first(n));
        EXPECT_EQ(image.pixels.size(), size_t(image.width) * image.height * image.channels);
      } catch (const ImageError&) {
      }
    }
  }
}

TEST(ImageDecode, CorruptedBytesNeverCrash) {
  const std::string dir = reference_dir("images");
  for (const char* file : {"rgb.png", "rgb.jpg", "lossy.webp", "palette.gif"}) {
    std::vector<uint8_t> bytes = read_bytes(dir + "/" + file);
    for (size_t i = 16; i < bytes.size(); i += 5) {
      std::vector<uint8_t> corrupt = bytes;
      corrupt[i] ^= 0x5a;
      try {
        decode_image(corrupt);
      } catch (const ImageError&) {
      }
    }
  }
}

TEST(ImageDecode, PixelLimitRefusesBeforeDecoding) {
  const std::string dir = reference_dir("images");
  ImageDecodeOptions small;
  small.max_pixels = 37 * 53 - 1;
  for (const char* file : {"rgb.png", "rgb.jpg", "lossy.webp", "palette.gif", "animated.webp"}) {
    SCOPED_TRACE(file);
    expect_image_error(read_bytes(dir + "/" + file), "exceeds the limit", small);
    small.max_pixels = 37 * 53;
    EXPECT_NO_THROW(decode_file(dir + "/" + file, small));
    small.max_pixels = 37 * 53 - 1;
  }
}

// PNG's chunk checksum (CRC-32, polynomial 0xedb88320).
uint32_t crc32(std::span<const uint8_t> bytes) {
  uint32_t crc = 0xffffffffu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
  }
  return ~crc;
}

// A PNG whose header announces 100000 x 100000 pixels over a 53x37 image's data: a decompression
// bomb is refused from its header alone, even when nothing follows the header.
TEST(ImageDecode, HugeHeaderIsRefusedFromTheHeaderAlone) {
  std::vector<uint8_t> png = read_bytes(reference_dir("images") + "/rgb.png");
  const uint8_t huge[4] = {0x00, 0x01, 0x86, 0xa0};  // 100000, big-endian
  std::memcpy(&png[16], huge, 4);
  std::memcpy(&png[20], huge, 4);
  const uint32_t crc = crc32(std::span(png).subspan(12, 17));  // chunk type and data
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  expect_image_error(png, "100000x100000 pixels exceeds the limit");
  png.resize(33);  // nothing after IHDR
  expect_image_error(png, "100000x100000 pixels exceeds the limit");
}

TEST(ImageDecode, ConvertToRgbReplicatesGrayAndCompositesAlphaOnWhite) {
  Image gray_alpha(1, 1, 2);
  gray_alpha.pixels = {77, 0};
  EXPECT_EQ(convert_to_rgb(gray_alpha).pixels, (std::vector<uint8_t>{77, 77, 77}));
  Image rgba(2, 1, 4);
  rgba.pixels = {10, 20, 30, 0, 200, 100, 0, 128};
  EXPECT_EQ(convert_to_rgb(rgba, AlphaHandling::kDrop).pixels,
            (std::vector<uint8_t>{10, 20, 30, 200, 100, 0}));
  // Transparent: white. Half: (255 * 127 + v * 128) / 255, rounded.
  EXPECT_EQ(convert_to_rgb(rgba, AlphaHandling::kCompositeRgbaOnWhite).pixels,
            (std::vector<uint8_t>{255, 255, 255, 227, 177, 127}));
}

}  // namespace
}  // namespace pagedllm
