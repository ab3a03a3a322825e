// The Qwen2-VL and Qwen2.5-VL vision encoders against a numpy transcription of HF's forward
// (tests/reference/qwen2vl_reference.py vision), on tiny random weights written as safetensors.
#include "multimodal/vision_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "format/safetensors_file.h"
#include "multimodal/reference.h"

namespace pagedllm {
namespace {

using nlohmann::json;

// config.json as HF writes it for the family, with tiny sizes.
json hf_config(bool qwen25) {
  if (qwen25) {
    return json::parse(R"({"model_type": "qwen2_5_vl", "vision_config": {
      "depth": 4, "hidden_size": 32, "num_heads": 2, "intermediate_size": 48,
      "out_hidden_size": 24, "patch_size": 14, "temporal_patch_size": 2, "in_chans": 3,
      "spatial_merge_size": 2, "window_size": 56, "fullatt_block_indexes": [1, 3],
      "hidden_act": "silu", "tokens_per_second": 2}})");
  }
  return json::parse(R"({"model_type": "qwen2_vl", "vision_config": {
    "depth": 3, "embed_dim": 32, "num_heads": 4, "mlp_ratio": 2, "hidden_size": 24,
    "patch_size": 14, "temporal_patch_size": 2, "in_chans": 3, "spatial_merge_size": 2,
    "hidden_act": "quick_gelu"}})");
}

void expect_matches_reference(bool qwen25, const std::vector<std::vector<int64_t>>& grids,
                              const std::string& dtype = "F32") {
  const VisionEncoderConfig config = VisionEncoderConfig::from_hf_config(hf_config(qwen25));
  json reference = {{"family", qwen25 ? "qwen2.5-vl" : "qwen2-vl"},
                    {"depth", config.depth},
                    {"hidden_size", config.hidden_size},
                    {"num_heads", config.num_heads},
                    {"intermediate_size", config.intermediate_size},
                    {"out_hidden_size", config.out_hidden_size},
                    {"patch_size", config.patch_size},
                    {"temporal_patch_size", config.temporal_patch_size},
                    {"spatial_merge_size", config.spatial_merge_size},
                    {"window_size", config.window_size},
                    {"fullatt_block_indexes", config.fullatt_block_indexes}};
  const std::string dir =
      test::temp_path(std::string(qwen25 ? "vision-qwen25-" : "vision-qwen2-") + dtype);
  const json shape = test::reference_json(
      "vision " + dir, json{{"config", reference}, {"grids", grids}, {"dtype", dtype}}.dump());

  SafetensorsFile file(dir + "/vision.safetensors");
  const VisionEncoder encoder(config, safetensors_vision_weights(file, "visual."));
  std::vector<GridTHW> grid_list;
  for (const auto& g : grids) grid_list.push_back({g[0], g[1], g[2]});
  const std::vector<float> pixels = test::read_floats(dir + "/pixels.f32");
  const std::vector<float> got = encoder.encode(pixels, grid_list);
  const std::vector<float> expected = test::read_floats(dir + "/expected.f32");
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_EQ(static_cast<int64_t>(got.size()),
            shape["rows"].get<int64_t>() * config.out_hidden_size);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - expected[i]) / (1 + std::abs(expected[i])));
  }
  EXPECT_LT(worst, 2e-4);
}

TEST(VisionEncoder, Qwen25WindowedEncoderEqualsHfForward) {
  // Windows of 2x2 merged blocks: 5x6 blocks leave partial windows; the 2-frame grid has its
  // own segments per frame.
  expect_matches_reference(true, {{1, 10, 12}, {1, 4, 4}, {2, 4, 6}});
}

TEST(VisionEncoder, Qwen2EncoderEqualsHfForward) {
  expect_matches_reference(false, {{1, 6, 8}, {1, 2, 2}});
}

// Qwen2.5-VL checkpoints are bf16: the weights are widened to f32 as they are read.
TEST(VisionEncoder, Bf16AndF16CheckpointsAreRead) {
  expect_matches_reference(true, {{1, 6, 4}}, "BF16");
  expect_matches_reference(false, {{1, 4, 4}}, "F16");
}

TEST(VisionEncoder, ImagesDoNotSeeEachOther) {
  // Encoding two images together gives each the rows it gets alone.
  const VisionEncoderConfig config = VisionEncoderConfig::from_hf_config(hf_config(true));
  const auto weights = [](const std::string& name, size_t n) {
    std::vector<float> w(n);
    const float base = static_cast<float>(std::hash<std::string>{}(name) % 97) / 97.0f;
    for (size_t i = 0; i < n; ++i) w[i] = 0.1f * std::sin(base * 31 + float(i) * 0.37f);
    if (name.find("norm") != std::string::npos || name.find("ln_q") != std::string::npos) {
      for (float& v : w) v += 1.0f;
    }
    return w;
  };
  const VisionEncoder encoder(config, weights);
  const GridTHW a{1, 4, 6}, b{1, 6, 4};
  std::vector<float> pa(a.num_patches() * config.patch_dim()),
      pb(b.num_patches() * config.patch_dim());
  for (size_t i = 0; i < pa.size(); ++i) pa[i] = std::cos(float(i) * 0.01f);
  for (size_t i = 0; i < pb.size(); ++i) pb[i] = std::sin(float(i) * 0.013f);
  std::vector<float> both = pa;
  both.insert(both.end(), pb.begin(), pb.end());
  const std::vector<GridTHW> grids = {a, b};
  const std::vector<float> together = encoder.encode(both, grids);
  std::vector<float> alone = encoder.encode(pa, std::span(&a, 1));
  const std::vector<float> alone_b = encoder.encode(pb, std::span(&b, 1));
  alone.insert(alone.end(), alone_b.begin(), alone_b.end());
  ASSERT_EQ(together.size(), alone.size());
  for (size_t i = 0; i < alone.size(); ++i) EXPECT_NEAR(together[i], alone[i], 1e-5f);
}

TEST(VisionEncoder, BadConfigsAndInputsAreRefused) {
  EXPECT_THROW(VisionEncoderConfig::from_hf_config(json::parse(R"({"model_type": "llama"})")),
               std::invalid_argument);
  json bad = hf_config(true);
  bad["vision_config"]["num_heads"] = 5;
  EXPECT_THROW(VisionEncoderConfig::from_hf_config(bad), std::invalid_argument);
  bad = hf_config(false);
  bad["vision_config"].erase("embed_dim");
  EXPECT_THROW(VisionEncoderConfig::from_hf_config(bad), std::invalid_argument);
  const auto missing = [](const std::string& name, size_t) -> std::vector<float> {
    throw std::invalid_argument("missing " + name);
  };
  EXPECT_THROW(VisionEncoder(VisionEncoderConfig::from_hf_config(hf_config(false)), missing),
               std::invalid_argument);
  const auto zeros = [](const std::string&, size_t n) { return std::vector<float>(n, 0.0f); };
  const VisionEncoder encoder(VisionEncoderConfig::from_hf_config(hf_config(false)), zeros);
  const GridTHW grid{1, 2, 2};
  const std::vector<float> too_few(4 * encoder.config().patch_dim() - 1);
  EXPECT_THROW(encoder.encode(too_few, std::span(&grid, 1)), std::invalid_argument);
  const GridTHW odd{1, 3, 2};
  const std::vector<float> pixels(6 * encoder.config().patch_dim());
  EXPECT_THROW(encoder.encode(pixels, std::span(&odd, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace pagedllm
