#include "multimodal/vision_encoder.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "format/block_quant.h"
#include "format/dequant.h"
#include "format/safetensors_file.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "multimodal/mrope.h"

namespace pagedllm {

namespace {

using nlohmann::json;

[[noreturn]] void config_error(const std::string& message) {
  throw std::invalid_argument("vision_config: " + message);
}

int read_int(const json& j, const char* key, int fallback = -1) {
  if (!j.contains(key)) {
    if (fallback >= 0) return fallback;
    config_error(std::string("missing '") + key + "'");
  }
  if (!j[key].is_number_integer()) config_error(std::string("'") + key + "' must be an integer");
  return j[key].get<int>();
}

float gelu(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
}
float quick_gelu(float x) {
  return x / (1.0f + std::exp(-1.702f * x));
}
float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

// Each image's patches as (row, column) in the preprocessor's order (merge blocks, row by row),
// per frame.
void patch_positions(std::span<const GridTHW> grids, int m, std::vector<int>& rows,
                     std::vector<int>& cols) {
  for (const GridTHW& g : grids)
    for (int64_t t = 0; t < g.t; ++t)
      for (int64_t bh = 0; bh < g.h / m; ++bh)
        for (int64_t bw = 0; bw < g.w / m; ++bw)
          for (int mh = 0; mh < m; ++mh)
            for (int mw = 0; mw < m; ++mw) {
              rows.push_back(static_cast<int>(bh * m + mh));
              cols.push_back(static_cast<int>(bw * m + mw));
            }
}

// Qwen2.5-VL's get_window_index: the merged blocks of each frame regrouped window by window
// (windows of `window` x `window` blocks, row-major, partial at the right and bottom), and the
// cumulative patch counts that delimit the windows.
void window_order(std::span<const GridTHW> grids, int m, int window, std::vector<int64_t>& order,
                  std::vector<int64_t>& bounds) {
  bounds = {0};
  int64_t base = 0;
  for (const GridTHW& g : grids) {
    const int64_t lh = g.h / m, lw = g.w / m;
    const int64_t windows_h = (lh + window - 1) / window, windows_w = (lw + window - 1) / window;
    for (int64_t t = 0; t < g.t; ++t)
      for (int64_t wy = 0; wy < windows_h; ++wy)
        for (int64_t wx = 0; wx < windows_w; ++wx) {
          for (int64_t y = wy * window; y < std::min(lh, (wy + 1) * window); ++y)
            for (int64_t x = wx * window; x < std::min(lw, (wx + 1) * window); ++x)
              order.push_back(base + (t * lh + y) * lw + x);
          bounds.push_back(static_cast<int64_t>(order.size()) * m * m);
        }
    base += g.t * lh * lw;
  }
}

// Cumulative patch counts at each frame's end: full attention never crosses a frame (or an
// image). Validates each grid.
std::vector<int64_t> frame_segments(std::span<const GridTHW> grids, int m) {
  std::vector<int64_t> bounds = {0};
  for (const GridTHW& g : grids) {
    num_image_tokens(g, m);  // throws for a grid that does not merge
    for (int64_t t = 0; t < g.t; ++t) bounds.push_back(bounds.back() + g.h * g.w);
  }
  return bounds;
}

// Groups of `width` consecutive values, taken in `order`.
template <typename T>
std::vector<T> gather_groups(const std::vector<T>& values, int64_t width,
                             std::span<const int64_t> order) {
  std::vector<T> out(values.size());
  for (size_t k = 0; k < order.size(); ++k) {
    std::copy_n(&values[order[k] * width], width, &out[k * width]);
  }
  return out;
}

// 2-D rotary angles per patch, [n, head_dim / 2]: the first quarter of a head's channels turn
// with the row, the second with the column, at frequencies 10000^(-4i / head_dim); rotate_half
// pairs channel i with i + head_dim / 2 at the same angle.
void rotary_tables(std::span<const int> rows, std::span<const int> cols, int head_dim,
                   std::vector<float>& cos, std::vector<float>& sin) {
  const int half = head_dim / 2, quarter = half / 2;
  cos.resize(rows.size() * half);
  sin.resize(cos.size());
  for (size_t r = 0; r < rows.size(); ++r)
    for (int j = 0; j < half; ++j) {
      const int freq = j % quarter;
      const float inv = 1.0f / std::pow(10000.0f, static_cast<float>(2 * freq) / half);
      const float angle = static_cast<float>(j < quarter ? rows[r] : cols[r]) * inv;
      cos[r * half + j] = std::cos(angle);
      sin[r * half + j] = std::sin(angle);
    }
}

}  // namespace

VisionEncoderConfig VisionEncoderConfig::from_hf_config(const json& config) {
  if (!config.is_object() || !config.contains("vision_config") ||
      !config["vision_config"].is_object()) {
    config_error("config.json has no vision_config object");
  }
  const json& v = config["vision_config"];
  const std::string type = config.value("model_type", "");
  VisionEncoderConfig c;
  if (type == "qwen2_vl") {
    c.family = VisionFamily::kQwen2VL;
    c.hidden_size = read_int(v, "embed_dim");
    c.intermediate_size = c.hidden_size * read_int(v, "mlp_ratio", 4);
    c.out_hidden_size = read_int(v, "hidden_size");
  } else if (type == "qwen2_5_vl") {
    c.family = VisionFamily::kQwen25VL;
    c.hidden_size = read_int(v, "hidden_size");
    c.intermediate_size = read_int(v, "intermediate_size");
    c.out_hidden_size = read_int(v, "out_hidden_size");
    c.window_size = read_int(v, "window_size", 112);
    if (v.contains("fullatt_block_indexes")) {
      c.fullatt_block_indexes = v["fullatt_block_indexes"].get<std::vector<int>>();
    }
  } else {
    config_error("model_type '" + type + "' is not qwen2_vl or qwen2_5_vl");
  }
  c.depth = read_int(v, "depth");
  c.num_heads = read_int(v, "num_heads");
  c.in_channels = read_int(v, "in_chans", read_int(v, "in_channels", 3));
  c.patch_size = read_int(v, "patch_size", 14);
  c.temporal_patch_size = read_int(v, "temporal_patch_size", 2);
  c.spatial_merge_size = read_int(v, "spatial_merge_size", 2);
  const auto positive = [](int x) { return x > 0 && x <= (1 << 16); };
  if (!positive(c.depth) || !positive(c.hidden_size) || !positive(c.num_heads) ||
      !positive(c.intermediate_size) || !positive(c.out_hidden_size) || !positive(c.patch_size) ||
      !positive(c.temporal_patch_size) || !positive(c.spatial_merge_size) ||
      !positive(c.in_channels)) {
    config_error("sizes must be positive");
  }
  if (c.hidden_size % c.num_heads != 0 || c.head_dim() % 4 != 0) {
    config_error("the head size must divide hidden_size and be a multiple of 4");
  }
  if (c.family == VisionFamily::kQwen25VL && c.window_size < c.patch_size * c.spatial_merge_size) {
    config_error("window_size must cover at least one merged patch");
  }
  return c;
}

VisionWeightSource safetensors_vision_weights(const SafetensorsFile& file, std::string prefix) {
  return [&file, prefix](const std::string& name, size_t elements) {
    const SafetensorsTensor* t = file.find(prefix + name);
    if (!t) throw std::invalid_argument("vision weights: missing tensor " + prefix + name);
    const auto dtype = dtype_of_safetensors(t->dtype);
    if (!dtype || (*dtype != DType::kF32 && *dtype != DType::kF16 && *dtype != DType::kBF16)) {
      throw std::invalid_argument("vision weights: " + prefix + name + " is " + t->dtype +
                                  ", not F32, F16 or BF16");
    }
    size_t count = 1;
    for (int64_t d : t->shape) count *= static_cast<size_t>(d);
    if (count != elements) {
      throw std::invalid_argument("vision weights: " + prefix + name + " has " +
                                  std::to_string(count) + " elements, expected " +
                                  std::to_string(elements));
    }
    std::vector<float> out(count);
    dequantize_row(*dtype, t->data, out.data(), static_cast<int64_t>(count));
    return out;
  };
}

VisionEncoder::Linear VisionEncoder::linear(const VisionWeightSource& w, const std::string& name,
                                            int in, int out) const {
  Linear l;
  l.in = in;
  l.out = out;
  const std::vector<float> weight = w(name + ".weight", static_cast<size_t>(in) * out);
  if (config_.matmul_dtype == DType::kQ8_0 && in % 32 == 0) {
    // Q8_0 blocks of 32 along each row: the kernels' int8 products (VNNI where the CPU has it).
    std::vector<uint8_t> blocks(row_bytes(DType::kQ8_0, in) * static_cast<size_t>(out));
    quantize_blocks(DType::kQ8_0, weight.data(), blocks.data(),
                    static_cast<int64_t>(weight.size()));
    l.weight = cpu::PackedMatrix(WeightMatrix{DType::kQ8_0, out, in, blocks.data()});
  } else if (config_.matmul_dtype != DType::kF32) {
    std::vector<uint16_t> bf16(weight.size());
    for (size_t i = 0; i < weight.size(); ++i) bf16[i] = f32_to_bf16(weight[i]);
    l.weight = cpu::PackedMatrix(WeightMatrix{DType::kBF16, out, in, bf16.data()});
  } else {
    l.weight = cpu::PackedMatrix(WeightMatrix{DType::kF32, out, in, weight.data()});
  }
  if (name != "patch_embed.proj") l.bias = w(name + ".bias", out);
  return l;
}

std::vector<float> VisionEncoder::apply(const Linear& l, std::span<const float> x) {
  const int64_t n = static_cast<int64_t>(x.size()) / l.in;
  std::vector<float> y(static_cast<size_t>(n) * l.out);
  if (n > 0) {
    // The native kernels, never oneDNN: their order of additions does not depend on the row
    // count, so an image encoded beside others gives the same output as alone.
    cpu::gemm_packed(cpu::active_isa(), x.data(), static_cast<int>(n), l.weight, y.data(),
                     l.bias.empty() ? nullptr : l.bias.data());
  }
  return y;
}

VisionEncoder::Norm VisionEncoder::norm(const VisionWeightSource& w, const std::string& name,
                                        int width) const {
  Norm n;
  n.weight = w(name + ".weight", width);
  if (config_.family == VisionFamily::kQwen2VL) n.bias = w(name + ".bias", width);
  return n;
}

VisionEncoder::VisionEncoder(VisionEncoderConfig config, const VisionWeightSource& weights)
    : config_(std::move(config)) {
  const VisionEncoderConfig& c = config_;
  const int d = c.hidden_size, f = c.intermediate_size;
  patch_embed_ = linear(weights, "patch_embed.proj", c.patch_dim(), d);
  for (int i = 0; i < c.depth; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    Block b;
    b.norm1 = norm(weights, p + "norm1", d);
    b.norm2 = norm(weights, p + "norm2", d);
    b.qkv = linear(weights, p + "attn.qkv", d, 3 * d);
    b.proj = linear(weights, p + "attn.proj", d, d);
    if (c.family == VisionFamily::kQwen2VL) {
      b.fc1 = linear(weights, p + "mlp.fc1", d, f);
      b.fc2 = linear(weights, p + "mlp.fc2", f, d);
    } else {
      b.gate = linear(weights, p + "mlp.gate_proj", d, f);
      b.up = linear(weights, p + "mlp.up_proj", d, f);
      b.down = linear(weights, p + "mlp.down_proj", f, d);
    }
    blocks_.push_back(std::move(b));
  }
  const int merged = d * c.spatial_merge_size * c.spatial_merge_size;
  merger_norm_ = norm(weights, "merger.ln_q", d);
  merger_fc1_ = linear(weights, "merger.mlp.0", merged, merged);
  merger_fc2_ = linear(weights, "merger.mlp.2", merged, c.out_hidden_size);
}

void VisionEncoder::apply_norm(const Norm& n, std::span<float> rows, int width) const {
  const int64_t count = static_cast<int64_t>(rows.size()) / width;
  const bool layer_norm = config_.family == VisionFamily::kQwen2VL;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < count; ++r) {
    float* x = &rows[r * width];
    double mean = 0.0;
    if (layer_norm) {
      for (int i = 0; i < width; ++i) mean += x[i];
      mean /= width;
    }
    double var = 0.0;
    for (int i = 0; i < width; ++i) var += (x[i] - mean) * (x[i] - mean);
    const float scale = static_cast<float>(1.0 / std::sqrt(var / width + config_.norm_eps));
    for (int i = 0; i < width; ++i) {
      x[i] = (x[i] - static_cast<float>(mean)) * scale * n.weight[i] + (layer_norm ? n.bias[i] : 0);
    }
  }
}

void VisionEncoder::attend_segment(const std::vector<float>& qkv, int64_t begin, int64_t end,
                                   int head, std::vector<float>& out) const {
  const int d = config_.hidden_size, hd = config_.head_dim();
  const auto len = static_cast<int>(end - begin);
  if (len <= 0) return;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> q(static_cast<size_t>(len) * hd), k(q.size()), vt(q.size());
  for (int i = 0; i < len; ++i) {
    const float* row =
        &qkv[static_cast<size_t>(begin + i) * 3 * d + static_cast<size_t>(head) * hd];
    std::copy_n(row, hd, &q[static_cast<size_t>(i) * hd]);
    std::copy_n(row + d, hd, &k[static_cast<size_t>(i) * hd]);
    for (int c = 0; c < hd; ++c) vt[static_cast<size_t>(c) * len + i] = row[2 * d + c];
  }
  const cpu::PackedMatrix keys(WeightMatrix{DType::kF32, len, hd, k.data()});
  const cpu::PackedMatrix values_t(WeightMatrix{DType::kF32, hd, len, vt.data()});
  std::vector<float> scores(static_cast<size_t>(len) * len);
  const cpu::Isa isa = cpu::active_isa();
  cpu::gemm_packed(isa, q.data(), len, keys, scores.data(), nullptr);
  for (int i = 0; i < len; ++i) {
    float* p = &scores[static_cast<size_t>(i) * len];
    float largest = -INFINITY;
    for (int j = 0; j < len; ++j) largest = std::max(largest, p[j] *= scale);
    float total = 0.0f;
    for (int j = 0; j < len; ++j) total += (p[j] = std::exp(p[j] - largest));
    const float inverse = 1.0f / total;
    for (int j = 0; j < len; ++j) p[j] *= inverse;
  }
  std::vector<float> o(static_cast<size_t>(len) * hd);
  cpu::gemm_packed(isa, scores.data(), len, values_t, o.data(), nullptr);
  for (int i = 0; i < len; ++i)
    std::copy_n(&o[static_cast<size_t>(i) * hd], hd,
                &out[static_cast<size_t>(begin + i) * d + static_cast<size_t>(head) * hd]);
}

void VisionEncoder::attention(const Block& b, std::vector<float>& x, std::span<const float> cos,
                              std::span<const float> sin, std::span<const int64_t> segments) const {
  const int d = config_.hidden_size, heads = config_.num_heads, hd = config_.head_dim();
  const int64_t n = static_cast<int64_t>(x.size()) / d;
  std::vector<float> h = x;
  apply_norm(b.norm1, h, d);
  std::vector<float> qkv = apply(b.qkv, h);
  // Rotary on q and k: channel i pairs with i + hd / 2 (rotate_half), both at angle i.
  const int half = hd / 2;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r)
    for (int part = 0; part < 2; ++part)
      for (int head = 0; head < heads; ++head) {
        float* v = &qkv[r * 3 * d + part * d + head * hd];
        for (int i = 0; i < half; ++i) {
          const float c = cos[r * half + i], s = sin[r * half + i];
          const float a = v[i], bb = v[i + half];
          v[i] = a * c - bb * s;
          v[i + half] = bb * c + a * s;
        }
      }
  std::vector<float> out(static_cast<size_t>(n) * d);
  // Each (segment, head) is two matrix products on the packed kernels: scores = Q K^T over the
  // segment's own keys (a window, or a frame), softmax by row, then scores V. A segment's rows
  // never depend on other segments, so images and windows stay apart.
  const int num_segments = static_cast<int>(segments.size()) - 1;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int seg = 0; seg < num_segments; ++seg)
    for (int head = 0; head < heads; ++head)
      attend_segment(qkv, segments[static_cast<size_t>(seg)],
                     segments[static_cast<size_t>(seg) + 1], head, out);
  const std::vector<float> projected = apply(b.proj, out);
  for (size_t i = 0; i < x.size(); ++i) x[i] += projected[i];
}

void VisionEncoder::mlp(const Block& b, std::vector<float>& x) const {
  const int d = config_.hidden_size;
  std::vector<float> h = x;
  apply_norm(b.norm2, h, d);
  std::vector<float> inner;
  if (config_.family == VisionFamily::kQwen2VL) {
    inner = apply(b.fc1, h);
    for (float& v : inner) v = quick_gelu(v);
  } else {
    inner = apply(b.gate, h);
    const std::vector<float> up = apply(b.up, h);
    for (size_t i = 0; i < inner.size(); ++i) inner[i] = silu(inner[i]) * up[i];
  }
  const Linear& down = config_.family == VisionFamily::kQwen2VL ? b.fc2 : b.down;
  const std::vector<float> y = apply(down, inner);
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

std::vector<float> VisionEncoder::encode(std::span<const float> pixel_values,
                                         std::span<const GridTHW> grids) const {
  const VisionEncoderConfig& c = config_;
  const int m = c.spatial_merge_size, unit = m * m;
  const std::vector<int64_t> frames = frame_segments(grids, m);  // full attention's segments
  const int64_t n = frames.back();
  if (static_cast<int64_t>(pixel_values.size()) != n * c.patch_dim()) {
    throw std::invalid_argument("vision encoder: " + std::to_string(pixel_values.size()) +
                                " pixel values for " + std::to_string(n) + " patches of " +
                                std::to_string(c.patch_dim()));
  }
  std::vector<float> x = apply(patch_embed_, pixel_values);
  std::vector<int> rows, cols;
  patch_positions(grids, m, rows, cols);

  // Qwen2.5-VL regroups the merged blocks window by window; everything per patch follows.
  std::vector<int64_t> order, windows;
  const bool windowed = c.family == VisionFamily::kQwen25VL;
  if (windowed) {
    window_order(grids, m, c.window_size / m / c.patch_size, order, windows);
    x = gather_groups(x, c.hidden_size * unit, order);
    rows = gather_groups(rows, unit, order);
    cols = gather_groups(cols, unit, order);
  }
  std::vector<float> cos, sin;
  rotary_tables(rows, cols, c.head_dim(), cos, sin);

  for (int layer = 0; layer < c.depth; ++layer) {
    const bool full_attention = !windowed || std::count(c.fullatt_block_indexes.begin(),
                                                        c.fullatt_block_indexes.end(), layer) > 0;
    attention(blocks_[layer], x, cos, sin, full_attention ? frames : windows);
    mlp(blocks_[layer], x);
  }
  std::vector<float> merged = merge(x);
  if (!windowed) return merged;
  std::vector<float> restored(merged.size());
  const int out = c.out_hidden_size;
  for (size_t k = 0; k < order.size(); ++k) {
    std::copy_n(&merged[k * out], out, &restored[order[k] * out]);
  }
  return restored;
}

std::vector<float> VisionEncoder::merge(std::vector<float>& x) const {
  apply_norm(merger_norm_, x, config_.hidden_size);
  // Rows of merge_size^2 consecutive patches: [n / merge_size^2, hidden * merge_size^2].
  std::vector<float> hidden = apply(merger_fc1_, x);
  for (float& v : hidden) v = gelu(v);
  return apply(merger_fc2_, hidden);
}

}  // namespace pagedllm
