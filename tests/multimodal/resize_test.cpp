// PIL's bicubic resize, up and down, against Debian's python3-pil.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "multimodal/image.h"
#include "multimodal/reference.h"
#include "multimodal/resize.h"

namespace pagedllm {
namespace {

using test::read_bytes;

TEST(ResizeBicubic, EqualsPilOnManySizesUpAndDown) {
  const std::string dir = test::reference_dir("resize");
  const auto manifest = test::reference_manifest("resize");
  ASSERT_GE(manifest.size(), 40u);
  size_t pixels = 0, differing = 0;
  for (const auto& entry : manifest) {
    const std::string name = entry["expected"];
    SCOPED_TRACE(name);
    const Image source = decode_image(read_bytes(dir + "/" + entry["source"].get<std::string>()));
    const Image resized =
        resize_bicubic(source, entry["width"].get<int>(), entry["height"].get<int>());
    const std::vector<uint8_t> expected = read_bytes(dir + "/" + name);
    ASSERT_EQ(resized.pixels.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_LE(std::abs(resized.pixels[i] - expected[i]), 1) << "at byte " << i;
      differing += resized.pixels[i] != expected[i];
    }
    pixels += expected.size();
  }
  // The same fixed-point arithmetic as PIL's: not merely close, equal.
  EXPECT_EQ(differing, 0u) << "of " << pixels;
}

TEST(ResizeBicubic, SameSizeIsACopyAndOneAxisChangesOnlyThatAxis) {
  Image image(3, 2, 1);
  image.pixels = {0, 100, 200, 50, 150, 250};
  EXPECT_EQ(resize_bicubic(image, 3, 2).pixels, image.pixels);
  // Changing the height alone resamples each column on its own.
  const Image tall = resize_bicubic(image, 3, 5);
  for (int x = 0; x < 3; ++x) {
    Image column(1, 2, 1);
    column.pixels = {image.at(0, x, 0), image.at(1, x, 0)};
    const Image expected = resize_bicubic(column, 1, 5);
    for (int y = 0; y < 5; ++y) EXPECT_EQ(tall.at(y, x, 0), expected.at(y, 0, 0));
  }
}

TEST(ResizeBicubic, AConstantImageStaysConstant) {
  Image image(17, 9, 3);
  std::fill(image.pixels.begin(), image.pixels.end(), 173);
  for (auto [w, h] : {std::pair{5, 3}, {40, 31}, {1, 1}, {17, 100}}) {
    const Image resized = resize_bicubic(image, w, h);
    EXPECT_TRUE(std::all_of(resized.pixels.begin(), resized.pixels.end(),
                            [](uint8_t v) { return v == 173; }));
  }
}

TEST(ResizeBicubic, RefusesAnEmptyTarget) {
  Image image(4, 4, 3);
  EXPECT_THROW(resize_bicubic(image, 0, 4), ImageError);
  EXPECT_THROW(resize_bicubic(image, 4, -1), ImageError);
}

}  // namespace
}  // namespace pagedllm
