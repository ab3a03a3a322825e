// Preparing an image part: tokens counted from the grid, and the content hash that keys prefix
// caching (same pixels, same hash; anything the encoder would see differently, another).
#include "multimodal/image_input.h"

#include <gtest/gtest.h>

#include "multimodal/reference.h"

namespace pagedllm {
namespace {

using test::read_bytes;

TEST(ImageInput, PreparedImageCountsTokensAndKeepsTheSourceSize) {
  const std::string dir = test::reference_dir("images");
  const Qwen2VLImageProcessorConfig config;
  const PreparedImage p = prepare_qwen2vl_image(read_bytes(dir + "/rgb.png"), config);
  EXPECT_EQ(p.source_width, 53);
  EXPECT_EQ(p.source_height, 37);
  // 37x53 is below min_pixels (3136): scaled up to 56x84, a 4x6 grid, 6 merged tokens.
  EXPECT_EQ(p.processed.grid, (GridTHW{1, 4, 6}));
  EXPECT_EQ(p.num_tokens, 6);
}

TEST(ImageInput, SamePixelsInAnotherFormatHashTheSame) {
  const std::string dir = test::reference_dir("images");
  const Qwen2VLImageProcessorConfig config;
  const ImageHash png = prepare_qwen2vl_image(read_bytes(dir + "/rgb.png"), config).hash;
  const ImageHash webp = prepare_qwen2vl_image(read_bytes(dir + "/lossless.webp"), config).hash;
  const ImageHash jpeg = prepare_qwen2vl_image(read_bytes(dir + "/rgb.jpg"), config).hash;
  EXPECT_EQ(png, webp);  // lossless: the same pixels
  EXPECT_NE(png, jpeg);  // lossy: other pixels
}

TEST(ImageInput, OtherPixelBoundsOrAlphaHandlingHashDifferently) {
  const std::string dir = test::reference_dir("images");
  const Qwen2VLImageProcessorConfig config;
  const std::vector<uint8_t> rgba = read_bytes(dir + "/rgba.png");
  const ImageHash plain = prepare_qwen2vl_image(rgba, config).hash;
  EXPECT_EQ(prepare_qwen2vl_image(rgba, config).hash, plain);
  ImagePixelOverrides larger;
  larger.min_pixels = 112 * 112;
  EXPECT_NE(prepare_qwen2vl_image(rgba, config, larger).hash, plain);
  EXPECT_NE(prepare_qwen2vl_image(rgba, config, {}, {}, AlphaHandling::kCompositeRgbaOnWhite).hash,
            plain);
}

TEST(ImageInput, BadBytesAreAnImageError) {
  const std::vector<uint8_t> junk = {'G', 'I', 'F', '8', '9', 'a', 1, 2, 3};
  EXPECT_THROW(prepare_qwen2vl_image(junk, Qwen2VLImageProcessorConfig{}), ImageError);
}

}  // namespace
}  // namespace pagedllm
