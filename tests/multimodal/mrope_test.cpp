// Image placeholders and M-RoPE positions, against a numpy transcription of HF's get_rope_index
// (tests/reference/qwen2vl_reference.py rope).
#include "multimodal/mrope.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "multimodal/reference.h"

namespace pagedllm {
namespace {

using nlohmann::json;

constexpr int32_t kStart = 151652, kEnd = 151653, kImage = 151655, kVideo = 151656;

TEST(ImagePlaceholders, CountIsMergedPatches) {
  EXPECT_EQ(num_image_tokens({1, 32, 32}, 2), 256);
  EXPECT_EQ(num_image_tokens({1, 4, 6}, 2), 6);
  EXPECT_EQ(num_image_tokens({2, 4, 4}, 2), 8);
  EXPECT_EQ(num_image_tokens({1, 3, 5}, 1), 15);
  EXPECT_THROW(num_image_tokens({1, 3, 4}, 2), std::invalid_argument);
  EXPECT_THROW(num_image_tokens({0, 4, 4}, 2), std::invalid_argument);
}

TEST(ImagePlaceholders, ImageTokensAreStartPadsEnd) {
  const auto tokens = image_placeholder_tokens(VisionTokenIds{}, {1, 4, 6}, 2);
  EXPECT_EQ(tokens,
            (std::vector<int32_t>{kStart, kImage, kImage, kImage, kImage, kImage, kImage, kEnd}));
}

TEST(ImagePlaceholders, ExpansionReplacesEachPadAndReportsRanges) {
  const std::vector<int32_t> prompt = {1, kStart, kImage, kEnd, 2, 3, kStart, kImage, kEnd, 4};
  const std::vector<GridTHW> grids = {{1, 2, 4}, {1, 4, 4}};
  const ExpandedPrompt out = expand_image_placeholders(prompt, VisionTokenIds{}, grids, 2);
  ASSERT_EQ(out.tokens.size(), prompt.size() - 2 + 2 + 4);
  EXPECT_EQ(out.images, (std::vector<PlaceholderRange>{{2, 2}, {8, 4}}));
  EXPECT_EQ(out.tokens[1], kStart);
  EXPECT_EQ(out.tokens[4], kEnd);
  EXPECT_EQ(out.tokens[12], kEnd);
  EXPECT_EQ(out.tokens.back(), 4);
  EXPECT_THROW(expand_image_placeholders(prompt, VisionTokenIds{}, std::span(grids).first(1), 2),
               std::invalid_argument);
}

// A prompt with images (and videos) expanded, as the processor makes it.
struct RopeCase {
  std::string name;
  MropeVariant variant;
  std::vector<int32_t> tokens;
  std::vector<GridTHW> images, videos;
  std::vector<double> seconds;
};

std::vector<int32_t> vision(int32_t pad, const GridTHW& grid) {
  std::vector<int32_t> t = {kStart};
  t.insert(t.end(), num_image_tokens(grid, 2), pad);
  t.push_back(kEnd);
  return t;
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<RopeCase> rope_cases() {
  const GridTHW a{1, 4, 6}, b{1, 8, 2}, c{1, 2, 2}, v{3, 4, 4};
  const std::vector<int32_t> text = {10, 11, 12, 13, 14};
  return {
      {"text_only", MropeVariant::kQwen2VL, text, {}, {}, {}},
      {"one_image", MropeVariant::kQwen2VL, concat({text, vision(kImage, a), {7, 8}}), {a}, {}, {}},
      {"image_first", MropeVariant::kQwen2VL, concat({vision(kImage, b), text}), {b}, {}, {}},
      {"image_last", MropeVariant::kQwen25VL, concat({text, vision(kImage, a)}), {a}, {}, {}},
      {"three_images",
       MropeVariant::kQwen25VL,
       concat({{1}, vision(kImage, a), {2, 3}, vision(kImage, b), vision(kImage, c), text}),
       {a, b, c},
       {},
       {}},
      {"video_qwen2",
       MropeVariant::kQwen2VL,
       concat({text, vision(kVideo, v), {5}, vision(kImage, c), {6}}),
       {c},
       {v},
       {}},
      {"video_qwen25",
       MropeVariant::kQwen25VL,
       concat({text, vision(kImage, c), vision(kVideo, v), {6}}),
       {c},
       {v},
       {2.5}},
  };
}

json grids_json(const std::vector<GridTHW>& grids) {
  json out = json::array();
  for (const auto& g : grids) out.push_back({g.t, g.h, g.w});
  return out;
}

TEST(MropePositions, EqualHfGetRopeIndex) {
  for (const RopeCase& c : rope_cases()) {
    SCOPED_TRACE(c.name);
    json input = {{"tokens", c.tokens},
                  {"variant", c.variant == MropeVariant::kQwen25VL ? "qwen2.5-vl" : "qwen2-vl"},
                  {"spatial_merge_size", 2},
                  {"tokens_per_second", 2},
                  {"image_token_id", kImage},
                  {"video_token_id", kVideo},
                  {"vision_start_token_id", kStart},
                  {"image_grid_thw", grids_json(c.images)},
                  {"video_grid_thw", grids_json(c.videos)}};
    if (!c.seconds.empty()) input["second_per_grid_ts"] = c.seconds;
    const json expected = test::reference_json("rope", input.dump());

    MropeConfig config;
    config.variant = c.variant;
    config.tokens_per_second = 2;
    const MropePositions got = mrope_positions(c.tokens, config, {c.images, c.videos, c.seconds});
    ASSERT_EQ(got.num_tokens, static_cast<int64_t>(c.tokens.size()));
    for (int row = 0; row < 3; ++row)
      for (size_t i = 0; i < c.tokens.size(); ++i)
        ASSERT_EQ(got.at(row, i), expected["positions"][row][i].get<int64_t>())
            << "row " << row << " token " << i;
    EXPECT_EQ(got.delta, expected["delta"].get<int64_t>());
  }
}

TEST(MropePositions, OneImageByHand) {
  // [a b] <start> 4 pads of a 1x4x4 grid (2x2 merged) <end> [c]
  const std::vector<int32_t> tokens = {1, 2, kStart, kImage, kImage, kImage, kImage, kEnd, 3};
  const GridTHW grid{1, 4, 4};
  const MropePositions p = mrope_positions(tokens, MropeConfig{}, {std::span(&grid, 1)});
  const std::vector<int32_t> t = {0, 1, 2, 3, 3, 3, 3, 5, 6};
  const std::vector<int32_t> h = {0, 1, 2, 3, 3, 4, 4, 5, 6};
  const std::vector<int32_t> w = {0, 1, 2, 3, 4, 3, 4, 5, 6};
  EXPECT_EQ(std::vector<int32_t>(p.positions.begin(), p.positions.begin() + 9), t);
  EXPECT_EQ(std::vector<int32_t>(p.positions.begin() + 9, p.positions.begin() + 18), h);
  EXPECT_EQ(std::vector<int32_t>(p.positions.begin() + 18, p.positions.end()), w);
  // Positions end at 6 for 9 tokens: the next token (index 9) decodes at 9 + delta = 7.
  EXPECT_EQ(p.delta, -2);
  EXPECT_EQ(mrope_decode_position(9, p.delta), 7);
}

TEST(MropePositions, ConfigReadsQwen2VLAndQwen25VLFiles) {
  // Qwen2-VL-2B-Instruct's config.json, abridged.
  const MropeConfig qwen2 = MropeConfig::from_hf_config(json::parse(R"({
    "model_type": "qwen2_vl", "vision_start_token_id": 151652, "vision_end_token_id": 151653,
    "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656,
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {"embed_dim": 1280, "spatial_merge_size": 2}})"));
  EXPECT_EQ(qwen2.variant, MropeVariant::kQwen2VL);
  EXPECT_EQ(qwen2.ids.image_pad, kImage);
  EXPECT_EQ(qwen2.mrope_section, (std::vector<int>{16, 24, 24}));
  // Newer files keep the text settings in text_config.
  const MropeConfig qwen25 = MropeConfig::from_hf_config(json::parse(R"({
    "model_type": "qwen2_5_vl", "image_token_id": 7, "vision_start_token_id": 5,
    "text_config": {"rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]},
                    "video_token_id": 9},
    "vision_config": {"spatial_merge_size": 2, "tokens_per_second": 4}})"));
  EXPECT_EQ(qwen25.variant, MropeVariant::kQwen25VL);
  EXPECT_EQ(qwen25.ids.image_pad, 7);
  EXPECT_EQ(qwen25.ids.vision_start, 5);
  EXPECT_EQ(qwen25.ids.video_pad, 9);
  EXPECT_EQ(qwen25.ids.vision_end, kEnd);  // HF's default
  EXPECT_EQ(qwen25.tokens_per_second, 4.0);
  EXPECT_EQ(qwen25.mrope_section, (std::vector<int>{8, 12, 12}));
  EXPECT_THROW(MropeConfig::from_hf_config(json::parse(R"({"model_type": "llama"})")),
               std::invalid_argument);
  EXPECT_THROW(MropeConfig::from_hf_config(json::parse(
                   R"({"model_type": "qwen2_vl", "rope_scaling": {"mrope_section": [1, 2]}})")),
               std::invalid_argument);
  EXPECT_THROW(MropeConfig::from_hf_config(
                   json::parse(R"({"model_type": "qwen2_vl", "image_token_id": "x"})")),
               std::invalid_argument);
}

TEST(MropePositions, MismatchedPromptAndGridsAreRefused) {
  const std::vector<int32_t> tokens = {1, kStart, kImage, kImage, kEnd};
  const GridTHW four{1, 4, 4};
  EXPECT_THROW(mrope_positions(tokens, MropeConfig{}, {}), std::invalid_argument);
  EXPECT_THROW(mrope_positions(tokens, MropeConfig{}, {std::span(&four, 1)}),
               std::invalid_argument);
}

}  // namespace
}  // namespace pagedllm
