// Qwen2-VL / Qwen2.5-VL image preprocessing, equal to Hugging Face's Qwen2VLImageProcessor (the
// PIL one that vLLM runs): RGB, smart_resize to multiples of patch_size * merge_size within
// [min_pixels, max_pixels], PIL's bicubic resize, rescale, normalise, the frame repeated to
// temporal_patch_size, and the patches flattened in HF's order (merge_size x merge_size groups
// of neighbouring patches are consecutive, so the vision merger can take them four at a time).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "multimodal/image.h"

namespace pagedllm {

// preprocessor_config.json's fields, with HF's defaults for those a file leaves out.
struct Qwen2VLImageProcessorConfig {
  bool do_resize = true;
  bool do_rescale = true;
  bool do_normalize = true;
  bool do_convert_rgb = true;
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> image_mean = {0.48145466f, 0.4578275f, 0.40821073f};  // OPENAI_CLIP_MEAN
  std::array<float, 3> image_std = {0.26862954f, 0.26130258f, 0.27577711f};  // OPENAI_CLIP_STD
  int64_t min_pixels = 56 * 56;
  int64_t max_pixels = 28 * 28 * 1280;
  int patch_size = 14;
  int temporal_patch_size = 2;
  int merge_size = 2;

  // The fields of a preprocessor_config.json object: min_pixels / max_pixels, or else
  // size.shortest_edge / size.longest_edge (newer HF files), else the defaults. Throws
  // std::invalid_argument on a field of the wrong type or an impossible value.
  static Qwen2VLImageProcessorConfig from_json(const nlohmann::json& json);
  // Reads PATH (a preprocessor_config.json file, or a directory holding one).
  static Qwen2VLImageProcessorConfig from_file(const std::string& path);
};

// Per-request overrides (vLLM's mm_processor_kwargs); each one given replaces the config's.
struct ImagePixelOverrides {
  std::optional<int64_t> min_pixels;
  std::optional<int64_t> max_pixels;
};

struct ImageSize {
  int64_t height = 0;
  int64_t width = 0;
  bool operator==(const ImageSize&) const = default;
};

// HF's smart_resize: both sides multiples of factor, height * width within [min_pixels,
// max_pixels] as nearly as the rounding allows, the aspect ratio kept. Throws ImageError for an
// aspect ratio above 200 or a size that comes out empty.
ImageSize smart_resize(int64_t height, int64_t width, int factor, int64_t min_pixels,
                       int64_t max_pixels);

// An image's patch grid in patches of patch_size (before merging): t x h x w.
struct GridTHW {
  int64_t t = 0;
  int64_t h = 0;
  int64_t w = 0;
  int64_t num_patches() const { return t * h * w; }
  bool operator==(const GridTHW&) const = default;
};

struct ProcessedImage {
  // [num_patches, patch_dim] row-major; patch_dim = 3 * temporal_patch_size * patch_size^2, in
  // the order channel, frame, row, column.
  std::vector<float> pixel_values;
  int64_t num_patches = 0;
  int64_t patch_dim = 0;
  GridTHW grid;  // HF's image_grid_thw row
};

// The size an image of height x width is resized to, with the overrides applied. Throws
// ImageError when the overrides are not positive or min exceeds max, or as smart_resize.
ImageSize qwen2vl_resized_size(const Qwen2VLImageProcessorConfig& config, int64_t height,
                               int64_t width, const ImagePixelOverrides& overrides = {});

// The grid an image of height x width gets, without touching pixels (to count its tokens).
GridTHW qwen2vl_image_grid(const Qwen2VLImageProcessorConfig& config, int64_t height, int64_t width,
                           const ImagePixelOverrides& overrides = {});

// The whole preprocessing of one decoded image. max_resized_pixels bounds the work and memory
// that overrides or a config can ask for (ImageError beyond it).
ProcessedImage qwen2vl_preprocess_image(const Image& image,
                                        const Qwen2VLImageProcessorConfig& config,
                                        const ImagePixelOverrides& overrides = {},
                                        AlphaHandling alpha = AlphaHandling::kDrop,
                                        int64_t max_resized_pixels = kDefaultMaxImagePixels);

}  // namespace pagedllm
