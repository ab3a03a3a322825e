// Qwen2-VL preprocessing against a numpy + PIL reference written from HF's
// Qwen2VLImageProcessor (tests/reference/qwen2vl_reference.py), and its parts.
#include "multimodal/qwen2vl_image_processor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "multimodal/reference.h"

namespace pagedllm {
namespace {

using nlohmann::json;
using test::read_bytes;

TEST(Qwen2VLPreprocess, PixelValuesAndGridEqualTheReference) {
  const std::string dir = test::reference_dir("preprocess");
  const auto manifest = test::reference_manifest("preprocess");
  ASSERT_GE(manifest.size(), 10u);
  for (const auto& entry : manifest) {
    const std::string name = entry["image"];
    SCOPED_TRACE(name + " " + entry["overrides"].dump());
    const auto config = Qwen2VLImageProcessorConfig::from_json(entry["config"]);
    ImagePixelOverrides overrides;
    for (const char* key : {"min_pixels", "max_pixels"}) {
      if (!entry["overrides"].contains(key)) continue;
      (std::string(key) == "min_pixels" ? overrides.min_pixels : overrides.max_pixels) =
          entry["overrides"][key].get<int64_t>();
    }
    const Image image = decode_image(read_bytes(dir + "/" + name));
    const ProcessedImage out = qwen2vl_preprocess_image(image, config, overrides);
    const auto grid = entry["grid_thw"];
    EXPECT_EQ(out.grid,
              (GridTHW{grid[0].get<int64_t>(), grid[1].get<int64_t>(), grid[2].get<int64_t>()}));
    EXPECT_EQ(qwen2vl_image_grid(config, image.height, image.width, overrides), out.grid);
    EXPECT_EQ(out.num_patches, entry["shape"][0].get<int64_t>());
    EXPECT_EQ(out.patch_dim, entry["shape"][1].get<int64_t>());
    const std::vector<float> expected =
        test::read_floats(dir + "/" + entry["expected"].get<std::string>());
    ASSERT_EQ(out.pixel_values.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(out.pixel_values[i], expected[i], 1e-6) << "at " << i;
    }
  }
}

TEST(Qwen2VLPreprocess, SmartResizeFollowsHfIncludingPythonsRounding) {
  EXPECT_EQ(smart_resize(224, 224, 28, 3136, 1003520), (ImageSize{224, 224}));
  // 20x30 rounds to 28x28 = 784 < 3136: scaled up by sqrt(3136 / 600), each side rounded up.
  EXPECT_EQ(smart_resize(20, 30, 28, 3136, 1003520), (ImageSize{56, 84}));
  // Python rounds halves to even: 42 / 28 = 1.5 -> 2, 70 / 28 = 2.5 -> 2.
  EXPECT_EQ(smart_resize(42, 70, 28, 1, 1 << 30), (ImageSize{56, 56}));
  // Over max_pixels: scaled down by sqrt(h * w / max), each side rounded down.
  EXPECT_EQ(smart_resize(1000, 2000, 28, 3136, 100000), (ImageSize{196, 420}));
  EXPECT_EQ(smart_resize(1, 200, 28, 3136, 1003520), (ImageSize{28, 812}));
  EXPECT_THROW(smart_resize(1, 201, 28, 3136, 1003520), ImageError);
  EXPECT_THROW(smart_resize(0, 10, 28, 3136, 1003520), ImageError);
}

TEST(Qwen2VLPreprocess, PatchesAreOrderedByMergeBlocksThenChannelFramePixel) {
  // A 56x56 image with its position in the pixels: patch 14, merge 2 gives a 4x4 grid and 2x2
  // merge blocks; the third patch of the output is the block's lower-left patch (row 1, col 0).
  Qwen2VLImageProcessorConfig config;
  config.do_normalize = false;
  config.do_rescale = false;
  Image image(56, 56, 3);
  for (int y = 0; y < 56; ++y)
    for (int x = 0; x < 56; ++x) {
      image.at(y, x, 0) = static_cast<uint8_t>(y);
      image.at(y, x, 1) = static_cast<uint8_t>(x);
      image.at(y, x, 2) = static_cast<uint8_t>(y * 2 + x % 3);
    }
  const ProcessedImage out = qwen2vl_preprocess_image(image, config);
  ASSERT_EQ(out.grid, (GridTHW{1, 4, 4}));
  ASSERT_EQ(out.patch_dim, 3 * 2 * 14 * 14);
  const auto value = [&](int patch, int c, int t, int y, int x) {
    return out.pixel_values[patch * out.patch_dim + ((c * 2 + t) * 14 + y) * 14 + x];
  };
  EXPECT_EQ(value(2, 0, 0, 0, 0), 14.0f);  // row 14
  EXPECT_EQ(value(2, 1, 0, 0, 5), 5.0f);   // column 5
  EXPECT_EQ(value(1, 1, 1, 3, 2), 16.0f);  // second patch: columns 14..27; second frame
  EXPECT_EQ(value(4, 1, 0, 0, 0), 28.0f);  // next block: columns 28..55
  EXPECT_EQ(value(8, 0, 0, 2, 0), 30.0f);  // lower blocks start at row 28
  EXPECT_EQ(value(3, 2, 1, 13, 13), 2 * 27 + 27 % 3);
}

TEST(Qwen2VLPreprocess, ConfigReadsHfFieldsAndKeepsHfDefaults) {
  const auto defaults = Qwen2VLImageProcessorConfig::from_json(json::object());
  EXPECT_EQ(defaults.min_pixels, 3136);
  EXPECT_EQ(defaults.max_pixels, 1003520);
  EXPECT_EQ(defaults.patch_size, 14);
  EXPECT_EQ(defaults.merge_size, 2);
  EXPECT_EQ(defaults.temporal_patch_size, 2);
  EXPECT_FLOAT_EQ(defaults.image_std[2], 0.27577711f);

  // Qwen2.5-VL-3B-Instruct's file, abridged.
  const auto qwen25 = Qwen2VLImageProcessorConfig::from_json(json::parse(R"({
    "min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2,
    "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"})"));
  EXPECT_EQ(qwen25.max_pixels, 12845056);

  // Newer files: size.shortest_edge / longest_edge, overridden by min_pixels / max_pixels.
  const auto sized = Qwen2VLImageProcessorConfig::from_json(json::parse(
      R"({"size": {"shortest_edge": 1000, "longest_edge": 50000}, "max_pixels": 40000,
          "patch_size": 16, "image_mean": 0.5, "do_normalize": false})"));
  EXPECT_EQ(sized.min_pixels, 1000);
  EXPECT_EQ(sized.max_pixels, 40000);
  EXPECT_EQ(sized.patch_size, 16);
  EXPECT_EQ(sized.image_mean[1], 0.5f);
  EXPECT_FALSE(sized.do_normalize);
}

TEST(Qwen2VLPreprocess, BadConfigsAreRefusedWithTheirField) {
  for (const char* text :
       {R"({"patch_size": "14"})", R"({"patch_size": 0})", R"({"merge_size": 2.5})",
        R"({"image_mean": [1, 2]})", R"({"image_std": [1, 0, 1]})",
        R"({"min_pixels": 10, "max_pixels": 5})", R"({"do_resize": 1})", R"([1, 2])"}) {
    SCOPED_TRACE(text);
    EXPECT_THROW(Qwen2VLImageProcessorConfig::from_json(json::parse(text)), std::invalid_argument);
  }
  EXPECT_THROW(Qwen2VLImageProcessorConfig::from_file("/nonexistent/dir"), std::invalid_argument);
}

TEST(Qwen2VLPreprocess, PerRequestPixelBoundsOverrideTheConfig) {
  Qwen2VLImageProcessorConfig config;
  EXPECT_EQ(qwen2vl_image_grid(config, 448, 448), (GridTHW{1, 32, 32}));
  ImagePixelOverrides fewer;
  fewer.max_pixels = 224 * 224;
  EXPECT_EQ(qwen2vl_image_grid(config, 448, 448, fewer), (GridTHW{1, 16, 16}));
  ImagePixelOverrides more;
  more.min_pixels = 896 * 896;
  more.max_pixels = 896 * 896;
  EXPECT_EQ(qwen2vl_image_grid(config, 448, 448, more), (GridTHW{1, 64, 64}));
  ImagePixelOverrides inverted;
  inverted.min_pixels = 5000;
  inverted.max_pixels = 4000;
  EXPECT_THROW(qwen2vl_image_grid(config, 448, 448, inverted), ImageError);
}

TEST(Qwen2VLPreprocess, ResizedSizeOverTheLimitIsRefused) {
  Qwen2VLImageProcessorConfig config;
  ImagePixelOverrides huge;
  huge.min_pixels = int64_t{1} << 40;
  huge.max_pixels = int64_t{1} << 41;
  Image image(28, 28, 3);
  EXPECT_THROW(qwen2vl_preprocess_image(image, config, huge), ImageError);
}

}  // namespace
}  // namespace pagedllm
