#include "multimodal/qwen2vl_image_processor.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "multimodal/resize.h"

namespace pagedllm {

namespace {

using nlohmann::json;

[[noreturn]] void config_error(const std::string& message) {
  throw std::invalid_argument("preprocessor_config.json: " + message);
}

template <typename T>
void read_number(const json& j, const char* key, T& out) {
  if (!j.contains(key) || j[key].is_null()) return;
  if (!j[key].is_number()) config_error(std::string("'") + key + "' must be a number");
  const double v = j[key].get<double>();
  if constexpr (std::is_integral_v<T>) {
    if (v != std::floor(v) || std::abs(v) > 1e15) {
      config_error(std::string("'") + key + "' must be an integer");
    }
  }
  out = static_cast<T>(v);
}

void read_bool(const json& j, const char* key, bool& out) {
  if (!j.contains(key) || j[key].is_null()) return;
  if (!j[key].is_boolean()) config_error(std::string("'") + key + "' must be true or false");
  out = j[key].get<bool>();
}

// A list of three numbers, or one number for every channel (as HF accepts).
void read_channels(const json& j, const char* key, std::array<float, 3>& out) {
  if (!j.contains(key) || j[key].is_null()) return;
  const json& v = j[key];
  if (v.is_number()) {
    out.fill(v.get<float>());
    return;
  }
  if (!v.is_array() || v.size() != 3 ||
      !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number(); })) {
    config_error(std::string("'") + key + "' must be a list of 3 numbers");
  }
  for (int c = 0; c < 3; ++c) out[c] = v[c].get<float>();
}

void validate(const Qwen2VLImageProcessorConfig& c) {
  const auto in_range = [](int v) { return v >= 1 && v <= 1024; };
  if (!in_range(c.patch_size) || !in_range(c.temporal_patch_size) || !in_range(c.merge_size)) {
    config_error("patch_size, temporal_patch_size and merge_size must be in [1, 1024]");
  }
  if (c.min_pixels < 1 || c.max_pixels < c.min_pixels) {
    config_error("need 1 <= min_pixels <= max_pixels");
  }
  for (float s : c.image_std) {
    if (s == 0.0f || !std::isfinite(s)) config_error("image_std must be finite and non-zero");
  }
}

int64_t python_round(double v) {
  return static_cast<int64_t>(std::nearbyint(v));
}  // half even

}  // namespace

Qwen2VLImageProcessorConfig Qwen2VLImageProcessorConfig::from_json(const json& j) {
  if (!j.is_object()) config_error("not a JSON object");
  Qwen2VLImageProcessorConfig c;
  read_bool(j, "do_resize", c.do_resize);
  read_bool(j, "do_rescale", c.do_rescale);
  read_bool(j, "do_normalize", c.do_normalize);
  read_bool(j, "do_convert_rgb", c.do_convert_rgb);
  read_number(j, "rescale_factor", c.rescale_factor);
  read_channels(j, "image_mean", c.image_mean);
  read_channels(j, "image_std", c.image_std);
  read_number(j, "patch_size", c.patch_size);
  read_number(j, "temporal_patch_size", c.temporal_patch_size);
  read_number(j, "merge_size", c.merge_size);
  // Newer files keep the pixel bounds in size; min_pixels / max_pixels override it, as in HF.
  if (j.contains("size") && j["size"].is_object()) {
    read_number(j["size"], "shortest_edge", c.min_pixels);
    read_number(j["size"], "longest_edge", c.max_pixels);
  }
  read_number(j, "min_pixels", c.min_pixels);
  read_number(j, "max_pixels", c.max_pixels);
  validate(c);
  return c;
}

Qwen2VLImageProcessorConfig Qwen2VLImageProcessorConfig::from_file(const std::string& path) {
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(file)) file /= "preprocessor_config.json";
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::invalid_argument(file.string() + ": invalid JSON");
  return from_json(j);
}

ImageSize smart_resize(int64_t height, int64_t width, int factor, int64_t min_pixels,
                       int64_t max_pixels) {
  if (height <= 0 || width <= 0 || factor <= 0) {
    throw ImageError("smart_resize: invalid size " + std::to_string(height) + "x" +
                     std::to_string(width));
  }
  const double ratio =
      static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width));
  if (ratio > 200) {
    throw ImageError("image aspect ratio must be at most 200, got " + std::to_string(ratio));
  }
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  int64_t h_bar = python_round(h / factor) * factor;
  int64_t w_bar = python_round(w / factor) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    h_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(h / beta / factor)) * factor);
    w_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(w / beta / factor)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / factor)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / factor)) * factor;
  }
  if (h_bar <= 0 || w_bar <= 0) throw ImageError("smart_resize: the image resizes to nothing");
  return {h_bar, w_bar};
}

ImageSize qwen2vl_resized_size(const Qwen2VLImageProcessorConfig& config, int64_t height,
                               int64_t width, const ImagePixelOverrides& overrides) {
  const int64_t min_pixels = overrides.min_pixels.value_or(config.min_pixels);
  const int64_t max_pixels = overrides.max_pixels.value_or(config.max_pixels);
  if (min_pixels < 1 || max_pixels < min_pixels) {
    throw ImageError("image pixel bounds: need 1 <= min_pixels <= max_pixels, got " +
                     std::to_string(min_pixels) + " and " + std::to_string(max_pixels));
  }
  if (!config.do_resize) {
    const int64_t factor = int64_t{config.patch_size} * config.merge_size;
    if (height % factor != 0 || width % factor != 0) {
      throw ImageError("image of " + std::to_string(width) + "x" + std::to_string(height) +
                       " is not a multiple of " + std::to_string(factor) + " and do_resize is off");
    }
    return {height, width};
  }
  return smart_resize(height, width, config.patch_size * config.merge_size, min_pixels, max_pixels);
}

GridTHW qwen2vl_image_grid(const Qwen2VLImageProcessorConfig& config, int64_t height, int64_t width,
                           const ImagePixelOverrides& overrides) {
  const ImageSize size = qwen2vl_resized_size(config, height, width, overrides);
  // One image is one frame, repeated to temporal_patch_size: a single temporal patch.
  return {1, size.height / config.patch_size, size.width / config.patch_size};
}

namespace {

// Rescaled and normalised values, planar [3][height][width], computed as HF does: the rescale
// in double then cast to float, the normalisation in float.
std::vector<float> normalized_planes(const Image& rgb, const Qwen2VLImageProcessorConfig& c) {
  const size_t n = static_cast<size_t>(rgb.width) * rgb.height;
  std::vector<float> planes(3 * n);
  for (int ch = 0; ch < 3; ++ch) {
    float table[256];
    for (int v = 0; v < 256; ++v) {
      float x = c.do_rescale ? static_cast<float>(v * c.rescale_factor) : static_cast<float>(v);
      if (c.do_normalize) x = (x - c.image_mean[ch]) / c.image_std[ch];
      table[v] = x;
    }
    for (size_t i = 0; i < n; ++i) planes[ch * n + i] = table[rgb.pixels[3 * i + ch]];
  }
  return planes;
}

}  // namespace

ProcessedImage qwen2vl_preprocess_image(const Image& image,
                                        const Qwen2VLImageProcessorConfig& config,
                                        const ImagePixelOverrides& overrides, AlphaHandling alpha,
                                        int64_t max_resized_pixels) {
  if (!config.do_convert_rgb && image.channels != 3) {
    throw ImageError("image is not RGB and do_convert_rgb is off");
  }
  const ImageSize size = qwen2vl_resized_size(config, image.height, image.width, overrides);
  if (size.height * size.width > max_resized_pixels) {
    throw ImageError("image would be resized to " + std::to_string(size.width) + "x" +
                     std::to_string(size.height) + ", over the limit of " +
                     std::to_string(max_resized_pixels) + " pixels");
  }
  Image rgb = image.channels == 3 ? image : convert_to_rgb(image, alpha);
  if (size.height != rgb.height || size.width != rgb.width) {
    rgb = resize_bicubic(rgb, static_cast<int>(size.width), static_cast<int>(size.height));
  }
  const std::vector<float> planes = normalized_planes(rgb, config);

  const int64_t p = config.patch_size, m = config.merge_size, frames = config.temporal_patch_size;
  ProcessedImage out;
  out.grid = {1, size.height / p, size.width / p};
  out.num_patches = out.grid.num_patches();
  out.patch_dim = 3 * frames * p * p;
  out.pixel_values.resize(static_cast<size_t>(out.num_patches * out.patch_dim));
  const int64_t width = size.width, plane = size.height * size.width;
  float* dst = out.pixel_values.data();
  // HF's permute(0, 3, 6, 4, 7, 2, 1, 5, 8): merge-block row, merge-block column, row and column
  // inside the block; then channel, frame, pixel row, pixel column inside the patch.
  for (int64_t bh = 0; bh < out.grid.h / m; ++bh)
    for (int64_t bw = 0; bw < out.grid.w / m; ++bw)
      for (int64_t mh = 0; mh < m; ++mh)
        for (int64_t mw = 0; mw < m; ++mw) {
          const int64_t top = (bh * m + mh) * p, left = (bw * m + mw) * p;
          for (int64_t ch = 0; ch < 3; ++ch)
            for (int64_t t = 0; t < frames; ++t)
              for (int64_t y = 0; y < p; ++y) {
                const float* src = &planes[ch * plane + (top + y) * width + left];
                dst = std::copy(src, src + p, dst);
              }
        }
  return out;
}

}  // namespace pagedllm
