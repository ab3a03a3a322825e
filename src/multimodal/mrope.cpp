#include "multimodal/mrope.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace pagedllm {

int64_t num_image_tokens(const GridTHW& grid, int merge_size) {
  if (merge_size < 1 || grid.t < 1 || grid.h < 1 || grid.w < 1 || grid.h % merge_size != 0 ||
      grid.w % merge_size != 0) {
    throw std::invalid_argument("image grid " + std::to_string(grid.t) + "x" +
                                std::to_string(grid.h) + "x" + std::to_string(grid.w) +
                                " does not merge by " + std::to_string(merge_size));
  }
  return grid.t * grid.h * grid.w / (int64_t{merge_size} * merge_size);
}

std::vector<int32_t> image_placeholder_tokens(const VisionTokenIds& ids, const GridTHW& grid,
                                              int merge_size) {
  std::vector<int32_t> tokens;
  const int64_t n = num_image_tokens(grid, merge_size);
  tokens.reserve(n + 2);
  tokens.push_back(ids.vision_start);
  tokens.insert(tokens.end(), n, ids.image_pad);
  tokens.push_back(ids.vision_end);
  return tokens;
}

ExpandedPrompt expand_image_placeholders(std::span<const int32_t> tokens, const VisionTokenIds& ids,
                                         std::span<const GridTHW> image_grids, int merge_size) {
  const auto pads = std::count(tokens.begin(), tokens.end(), ids.image_pad);
  if (static_cast<size_t>(pads) != image_grids.size()) {
    throw std::invalid_argument("the prompt has " + std::to_string(pads) +
                                " image placeholders for " + std::to_string(image_grids.size()) +
                                " images");
  }
  ExpandedPrompt out;
  size_t image = 0;
  for (int32_t token : tokens) {
    if (token != ids.image_pad) {
      out.tokens.push_back(token);
      continue;
    }
    const int64_t n = num_image_tokens(image_grids[image++], merge_size);
    out.images.push_back({static_cast<int64_t>(out.tokens.size()), n});
    out.tokens.insert(out.tokens.end(), n, ids.image_pad);
  }
  return out;
}

namespace {

using nlohmann::json;

// config[key], else config["text_config"][key], else null.
const json* find_setting(const json& config, const char* key) {
  if (config.contains(key)) return &config[key];
  if (config.contains("text_config") && config["text_config"].is_object() &&
      config["text_config"].contains(key)) {
    return &config["text_config"][key];
  }
  return nullptr;
}

template <typename T>
void read_setting(const json* j, const char* key, T& out) {
  if (!j || j->is_null()) return;
  if (!j->is_number()) {
    throw std::invalid_argument(std::string("config.json: '") + key + "' must be a number");
  }
  out = j->get<T>();
}

}  // namespace

MropeConfig MropeConfig::from_hf_config(const json& config) {
  if (!config.is_object()) throw std::invalid_argument("config.json: not a JSON object");
  const std::string type = config.value("model_type", "");
  MropeConfig c;
  if (type == "qwen2_vl") {
    c.variant = MropeVariant::kQwen2VL;
  } else if (type == "qwen2_5_vl") {
    c.variant = MropeVariant::kQwen25VL;
  } else {
    throw std::invalid_argument("config.json: model_type '" + type +
                                "' is not qwen2_vl or qwen2_5_vl");
  }
  read_setting(find_setting(config, "vision_start_token_id"), "vision_start_token_id",
               c.ids.vision_start);
  read_setting(find_setting(config, "vision_end_token_id"), "vision_end_token_id",
               c.ids.vision_end);
  read_setting(find_setting(config, "image_token_id"), "image_token_id", c.ids.image_pad);
  read_setting(find_setting(config, "video_token_id"), "video_token_id", c.ids.video_pad);
  if (config.contains("vision_config") && config["vision_config"].is_object()) {
    const json& v = config["vision_config"];
    if (v.contains("spatial_merge_size")) {
      read_setting(&v["spatial_merge_size"], "spatial_merge_size", c.spatial_merge_size);
    }
    if (v.contains("tokens_per_second")) {
      read_setting(&v["tokens_per_second"], "tokens_per_second", c.tokens_per_second);
    }
  }
  if (const json* rope = find_setting(config, "rope_scaling");
      rope && rope->is_object() && rope->contains("mrope_section")) {
    const json& section = (*rope)["mrope_section"];
    if (!section.is_array() || section.size() != 3 ||
        !std::all_of(section.begin(), section.end(),
                     [](const json& x) { return x.is_number_integer() && x.get<int>() >= 0; })) {
      throw std::invalid_argument("config.json: mrope_section must be 3 non-negative integers");
    }
    c.mrope_section = section.get<std::vector<int>>();
  }
  if (c.spatial_merge_size < 1) {
    throw std::invalid_argument("config.json: spatial_merge_size must be positive");
  }
  return c;
}

namespace {

// Appends [3, n] columns to the three rows.
struct Rows {
  std::vector<int64_t> t, h, w;
  void push(int64_t a, int64_t b, int64_t c) { t.push_back(a), h.push_back(b), w.push_back(c); }
};

// The first index >= from holding `token`, or size + 1 (as HF's sentinel).
int64_t find_from(std::span<const int32_t> tokens, int32_t token, int64_t from) {
  const auto it =
      std::find(tokens.begin() + std::min<int64_t>(from, tokens.size()), tokens.end(), token);
  return it == tokens.end() ? static_cast<int64_t>(tokens.size()) + 1 : it - tokens.begin();
}

}  // namespace

MropePositions mrope_positions(std::span<const int32_t> tokens, const MropeConfig& config,
                               const MropeVisionInputs& vision) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const VisionTokenIds& ids = config.ids;
  int64_t images = 0, videos = 0;
  for (int64_t i = 0; i + 1 < n; ++i) {
    if (tokens[i] != ids.vision_start) continue;
    images += tokens[i + 1] == ids.image_pad;
    videos += tokens[i + 1] == ids.video_pad;
  }
  if (static_cast<size_t>(images) > vision.image_grids.size() ||
      static_cast<size_t>(videos) > vision.video_grids.size()) {
    throw std::invalid_argument("the prompt has " + std::to_string(images) + " images and " +
                                std::to_string(videos) + " videos, more than the inputs give");
  }
  Rows rows;
  int64_t next = 0;  // the largest position so far + 1 (HF's st_idx)
  int64_t st = 0, image_index = 0, video_index = 0;
  const int m = config.spatial_merge_size;
  for (int64_t k = 0; k < images + videos; ++k) {
    const int64_t ed_image = image_index < images ? find_from(tokens, ids.image_pad, st) : n + 1;
    const int64_t ed_video = video_index < videos ? find_from(tokens, ids.video_pad, st) : n + 1;
    const bool is_image = ed_image < ed_video;
    const int64_t ed = is_image ? ed_image : ed_video;
    if (ed > n) throw std::invalid_argument("mrope: a vision placeholder is missing");
    const GridTHW grid =
        is_image ? vision.image_grids[image_index] : vision.video_grids[video_index];
    double second_per_grid = 0.0;  // images: no time
    if (!is_image) {
      second_per_grid = static_cast<size_t>(video_index) < vision.video_second_per_grid.size()
                            ? vision.video_second_per_grid[video_index]
                            : 1.0;
    }
    if (is_image) {
      ++image_index;
    } else {
      ++video_index;
    }
    const int64_t length = num_image_tokens(grid, m);
    const int32_t pad = is_image ? ids.image_pad : ids.video_pad;
    if (ed + length > n || std::any_of(tokens.begin() + ed, tokens.begin() + ed + length,
                                       [pad](int32_t t) { return t != pad; })) {
      throw std::invalid_argument("mrope: the placeholder at " + std::to_string(ed) + " is not " +
                                  std::to_string(length) + " tokens long");
    }
    for (int64_t i = st; i < ed; ++i) rows.push(next + i - st, next + i - st, next + i - st);
    const int64_t base = next + (ed - st);
    const int64_t gh = grid.h / m, gw = grid.w / m;
    // HF casts second_per_grid_t to the index dtype (int64) before scaling by tokens_per_second.
    const double seconds = std::trunc(second_per_grid);
    int64_t largest = base;
    for (int64_t t = 0; t < grid.t; ++t) {
      const int64_t tpos = config.variant == MropeVariant::kQwen2VL
                               ? t
                               : static_cast<int64_t>(t * seconds * config.tokens_per_second);
      for (int64_t y = 0; y < gh; ++y)
        for (int64_t x = 0; x < gw; ++x) {
          rows.push(base + tpos, base + y, base + x);
          largest = std::max({largest, base + tpos, base + y, base + x});
        }
    }
    next = largest + 1;
    st = ed + length;
  }
  for (int64_t i = st; i < n; ++i) rows.push(next + i - st, next + i - st, next + i - st);

  MropePositions out;
  out.num_tokens = n;
  out.positions.reserve(3 * n);
  int64_t largest = -1;
  for (const auto* row : {&rows.t, &rows.h, &rows.w})
    for (int64_t v : *row) {
      out.positions.push_back(static_cast<int32_t>(v));
      largest = std::max(largest, v);
    }
  out.delta = largest + 1 - n;
  return out;
}

}  // namespace pagedllm
