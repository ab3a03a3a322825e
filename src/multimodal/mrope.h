// Image placeholders in the prompt and Qwen2-VL's multimodal rotary positions (M-RoPE).
//
// A Qwen2-VL prompt carries each image as <|vision_start|> N x <|image_pad|> <|vision_end|>,
// N = grid_t * grid_h * grid_w / merge_size^2 (one token per merged patch). M-RoPE gives every
// token three positions (temporal, height, width): text tokens get the same running position in
// all three; an image's tokens get (t, row, column) of their merged patch, offset by the
// position after the preceding text; the text after an image continues from the largest
// position used so far plus one. Hugging Face's get_rope_index computes this; the functions here
// follow it exactly.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <vector>

#include "multimodal/qwen2vl_image_processor.h"

namespace pagedllm {

// The special token ids of a Qwen2-VL / Qwen2.5-VL config.json.
struct VisionTokenIds {
  int32_t vision_start = 151652;  // vision_start_token_id
  int32_t vision_end = 151653;    // vision_end_token_id
  int32_t image_pad = 151655;     // image_token_id
  int32_t video_pad = 151656;     // video_token_id
};

// grid.t * grid.h * grid.w / merge_size^2. Throws std::invalid_argument when h or w is not a
// multiple of merge_size.
int64_t num_image_tokens(const GridTHW& grid, int merge_size);

// vision_start, num_image_tokens copies of image_pad, vision_end.
std::vector<int32_t> image_placeholder_tokens(const VisionTokenIds& ids, const GridTHW& grid,
                                              int merge_size);

// Where an image's pad tokens lie in a prompt (vLLM's PlaceholderRange).
struct PlaceholderRange {
  int64_t offset = 0;
  int64_t length = 0;
  bool operator==(const PlaceholderRange&) const = default;
};

struct ExpandedPrompt {
  std::vector<int32_t> tokens;
  std::vector<PlaceholderRange> images;  // one per image, in prompt order
};

// What HF's Qwen2-VL processor does to the chat template's output: the k-th image_pad token
// becomes num_image_tokens(grids[k]) copies of it. Throws std::invalid_argument when the prompt
// has not exactly grids.size() image_pad tokens.
ExpandedPrompt expand_image_placeholders(std::span<const int32_t> tokens, const VisionTokenIds& ids,
                                         std::span<const GridTHW> image_grids, int merge_size);

// The temporal positions differ between the two families for videos: Qwen2-VL uses the frame
// index, Qwen2.5-VL the frame's time, index * second_per_grid_t * tokens_per_second, truncated.
// Images have t = 1 (and Qwen2.5-VL's second_per_grid_t = 0 for them), so for images they agree.
enum class MropeVariant { kQwen2VL, kQwen25VL };

struct MropeConfig {
  MropeVariant variant = MropeVariant::kQwen2VL;
  int spatial_merge_size = 2;      // vision_config.spatial_merge_size
  double tokens_per_second = 2.0;  // vision_config.tokens_per_second (Qwen2.5-VL)
  VisionTokenIds ids;
  // rope_scaling.mrope_section: how many of each head's rotary frequency pairs turn with the
  // temporal, height and width positions ({16, 24, 24} for a head of 128). Attention's business,
  // read here so that one place reads the model's multimodal settings.
  std::vector<int> mrope_section = {16, 24, 24};

  // From a whole config.json of a Qwen2-VL (model_type qwen2_vl) or Qwen2.5-VL (qwen2_5_vl)
  // model: the token ids and rope_scaling at the top level or in text_config (newer files),
  // the rest from vision_config; HF's defaults for what is absent. Throws
  // std::invalid_argument for another model_type or a field of the wrong type.
  static MropeConfig from_hf_config(const nlohmann::json& config);
};

// The vision inputs of one prompt, in prompt order per kind.
struct MropeVisionInputs {
  std::span<const GridTHW> image_grids = {};
  std::span<const GridTHW> video_grids = {};
  std::span<const double> video_second_per_grid = {};  // Qwen2.5-VL; missing ones count 1.0
};

struct MropePositions {
  // [3, num_tokens] row-major: row 0 temporal, row 1 height, row 2 width.
  std::vector<int32_t> positions;
  int64_t num_tokens = 0;
  // The decode token at sequence index i (i >= num_tokens) has position i + delta in all three
  // rows: delta = max position + 1 - num_tokens (HF's mrope_position_deltas).
  int64_t delta = 0;
  int32_t at(int row, int64_t token) const { return positions[row * num_tokens + token]; }
};

// HF's get_rope_index for one prompt without padding. An image or video is found by the
// vision_start token followed by its pad token; its grid comes from the inputs, in order.
// Throws std::invalid_argument when the prompt and the inputs disagree (too few grids, or a
// placeholder run that is not grid.t * (grid.h / m) * (grid.w / m) tokens long).
MropePositions mrope_positions(std::span<const int32_t> tokens, const MropeConfig& config,
                               const MropeVisionInputs& vision = {});

// The three (equal) positions of a decode token at sequence index `index`.
inline int32_t mrope_decode_position(int64_t index, int64_t delta) {
  return static_cast<int32_t>(index + delta);
}

}  // namespace pagedllm
