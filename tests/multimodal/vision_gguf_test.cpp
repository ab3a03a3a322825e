// llama.cpp's mmproj GGUF: written from HF-named weights in its layout, read back into the same
// encoder.
#include "multimodal/vision_gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "format/gguf_file.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

VisionEncoderConfig tiny(VisionFamily family) {
  VisionEncoderConfig c;
  c.family = family;
  c.depth = 4;
  c.hidden_size = 32;
  c.num_heads = 2;
  c.intermediate_size = family == VisionFamily::kQwen2VL ? 64 : 48;
  c.out_hidden_size = 24;
  c.window_size = 56;
  if (family == VisionFamily::kQwen25VL) c.fullatt_block_indexes = {1, 3};
  return c;
}

// Distinct values for every tensor and element, norms near 1.
std::vector<float> weight_values(const std::string& name, size_t n) {
  std::vector<float> w(n);
  const float seed = static_cast<float>(std::hash<std::string>{}(name) % 1009) / 1009.0f;
  const bool norm =
      name.find("norm") != std::string::npos || name.find("ln_q") != std::string::npos;
  for (size_t i = 0; i < n; ++i)
    w[i] = (norm ? 1.0f : 0.0f) + 0.2f * std::sin(seed * 97 + i * 0.61f);
  return w;
}

void expect_round_trip(VisionFamily family) {
  const VisionEncoderConfig config = tiny(family);
  const std::string path = test::temp_path(family == VisionFamily::kQwen2VL ? "qwen2-mmproj.gguf"
                                                                            : "qwen25-mmproj.gguf");
  write_mmproj_gguf(path, config, weight_values, DType::kF32);

  GGUFFile file(path);
  const bool qwen25 = family == VisionFamily::kQwen25VL;
  EXPECT_EQ(file.get_string("clip.projector_type"), qwen25 ? "qwen2.5vl_merger" : "qwen2vl_merger");
  // llama.cpp's names and GGUF shapes (innermost first).
  EXPECT_EQ(file.tensor("v.blk.0.attn_q.weight")->dims, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(file.tensor("v.patch_embd.weight.1")->dims, (std::vector<int64_t>{14, 14, 3, 32}));
  EXPECT_NE(file.tensor("v.post_ln.weight"), nullptr);
  EXPECT_EQ(file.tensor("mm.0.weight")->dims, (std::vector<int64_t>{128, 128}));
  EXPECT_NE(file.tensor(qwen25 ? "v.blk.3.ffn_gate.weight" : "v.blk.3.ln2.bias"), nullptr);
  if (qwen25) {
    EXPECT_EQ(file.get_int("clip.vision.n_wa_pattern"), 2);
  }

  const VisionEncoderConfig read = vision_config_from_mmproj(file);
  EXPECT_EQ(read.family, config.family);
  EXPECT_EQ(read.depth, config.depth);
  EXPECT_EQ(read.hidden_size, config.hidden_size);
  EXPECT_EQ(read.num_heads, config.num_heads);
  EXPECT_EQ(read.intermediate_size, config.intermediate_size);
  EXPECT_EQ(read.out_hidden_size, config.out_hidden_size);
  EXPECT_EQ(read.spatial_merge_size, 2);
  EXPECT_EQ(read.temporal_patch_size, 2);
  if (qwen25) {
    EXPECT_EQ(read.window_size, config.window_size);
  }
  EXPECT_EQ(read.fullatt_block_indexes, config.fullatt_block_indexes);

  // Every HF tensor comes back as it went in, so the encoders agree exactly.
  const VisionEncoder from_hf(config, weight_values);
  const VisionEncoder from_gguf(read, mmproj_vision_weights(file));
  const GridTHW grid{1, 6, 8};
  std::vector<float> pixels(grid.num_patches() * config.patch_dim());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::cos(i * 0.01f);
  EXPECT_EQ(from_gguf.encode(pixels, std::span(&grid, 1)),
            from_hf.encode(pixels, std::span(&grid, 1)));
  const auto source = mmproj_vision_weights(file);
  EXPECT_EQ(source("blocks.2.attn.qkv.bias", 96), weight_values("blocks.2.attn.qkv.bias", 96));
  EXPECT_EQ(source("patch_embed.proj.weight", 32 * 1176),
            weight_values("patch_embed.proj.weight", 32 * 1176));
}

TEST(VisionMmproj, Qwen25RoundTripsThroughLlamaCppsLayout) {
  expect_round_trip(VisionFamily::kQwen25VL);
}

TEST(VisionMmproj, Qwen2RoundTripsThroughLlamaCppsLayout) {
  expect_round_trip(VisionFamily::kQwen2VL);
}

TEST(VisionMmproj, F16ProjectorsAreWidened) {
  const VisionEncoderConfig config = tiny(VisionFamily::kQwen25VL);
  const std::string path = test::temp_path("qwen25-mmproj-f16.gguf");
  write_mmproj_gguf(path, config, weight_values, DType::kF16);
  GGUFFile file(path);
  const auto source = mmproj_vision_weights(file);
  const std::vector<float> expected = weight_values("blocks.0.mlp.up_proj.weight", 48 * 32);
  const std::vector<float> got = source("blocks.0.mlp.up_proj.weight", 48 * 32);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-3f);
  EXPECT_THROW(source("blocks.0.mlp.up_proj.weight", 10), std::invalid_argument);
  EXPECT_THROW(source("blocks.9.norm1.weight", 32), std::invalid_argument);
}

}  // namespace
}  // namespace pagedllm
