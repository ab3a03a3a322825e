#include "kernels/cpu/elementwise.h"

#include <cmath>
#include <numbers>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/exp_nonpositive.h"
#include "kernels/cpu/linear.h"

namespace pagedllm::cpu {

void rms_norm(const float* x, const float* weight, float* out, int rows, int width, float eps) {
#pragma omp parallel for schedule(static) if (rows > 8)
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<size_t>(r) * width;
    float* o = out + static_cast<size_t>(r) * width;
    const float mean_sq = dot(xr, xr, width) / static_cast<float>(width);
    const float scale = 1.0f / std::sqrt(mean_sq + eps);
    for (int i = 0; i < width; ++i) o[i] = xr[i] * scale * weight[i];
  }
}

std::vector<float> rope_inverse_frequencies(const ModelConfig& c) {
  const int half = c.head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    double freq = 1.0 / std::pow(static_cast<double>(c.rope_theta), 2.0 * i / c.head_dim);
    if (c.rope_scaling) {
      const auto& s = *c.rope_scaling;
      const double old_len = s.original_max_position_embeddings;
      const double low_wavelen = old_len / s.low_freq_factor;
      const double high_wavelen = old_len / s.high_freq_factor;
      const double wavelen = 2.0 * std::numbers::pi / freq;
      if (wavelen > low_wavelen) {
        freq /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        freq = (1.0 - smooth) * freq / s.factor + smooth * freq;
      }
    }
    inv[static_cast<size_t>(i)] = static_cast<float>(freq);
  }
  return inv;
}

void rope_angles(std::span<const int32_t> positions, std::span<const float> inv_freq,
                 RopeAngles& out) {
  const auto tokens = static_cast<int64_t>(positions.size());
  const auto half = static_cast<int64_t>(inv_freq.size());
  out.half = static_cast<int>(half);
  out.cos.resize(static_cast<size_t>(tokens * half));
  out.sin.resize(out.cos.size());
#pragma omp parallel for schedule(static) if (tokens > 8)
  for (int64_t t = 0; t < tokens; ++t) {
    const double pos = positions[static_cast<size_t>(t)];
    for (int64_t i = 0; i < half; ++i) {
      const double angle = pos * static_cast<double>(inv_freq[static_cast<size_t>(i)]);
      out.cos[static_cast<size_t>(t * half + i)] = static_cast<float>(std::cos(angle));
      out.sin[static_cast<size_t>(t * half + i)] = static_cast<float>(std::sin(angle));
    }
  }
}

void rope_heads(float* x, int n_heads, const float* cos, const float* sin, int half,
                RopeStyle style) {
  const bool avx512 = active_isa() >= Isa::kAvx512;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<size_t>(h) * 2 * half;
    if (avx512) {
      rope_head_avx512(v, cos, sin, half, style);
      continue;
    }
    for (int i = 0; i < half; ++i) {
      // Interleaved rotates (2i, 2i+1); NeoX rotates (i, i + half).
      const int a = style == RopeStyle::kInterleaved ? 2 * i : i;
      const int b = style == RopeStyle::kInterleaved ? 2 * i + 1 : i + half;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos[i] - x1 * sin[i];
      v[b] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

void apply_rope(float* x, int tokens, int n_heads, const RopeAngles& angles, RopeStyle style) {
  const int half = angles.half;
#pragma omp parallel for schedule(static) if (tokens > 8)
  for (int t = 0; t < tokens; ++t) {
    rope_heads(x + static_cast<size_t>(t) * n_heads * 2 * half, n_heads,
               angles.cos.data() + static_cast<size_t>(t) * half,
               angles.sin.data() + static_cast<size_t>(t) * half, half, style);
  }
}

namespace {

// g * sigmoid(g) from e = exp(-|g|) <= 1, which cannot overflow: sigmoid(g) = 1 / (1 + e) for
// g >= 0 and e / (1 + e) below. swiglu_row_avx512 repeats it op for op.
inline float silu(float g) {
  const float e = exp_nonpositive(-std::abs(g));
  return g * (g >= 0.0f ? 1.0f : e) / (1.0f + e);
}

}  // namespace

void swiglu(const float* gate_up, int tokens, int hidden, float* out) {
  const bool avx512 = active_isa() >= Isa::kAvx512;
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(tokens) * hidden > 65536)
  for (int t = 0; t < tokens; ++t) {
    const float* gate = gate_up + static_cast<size_t>(t) * 2 * hidden;
    const float* up = gate + hidden;
    float* o = out + static_cast<size_t>(t) * hidden;
    if (avx512) {
      swiglu_row_avx512(gate, up, o, hidden);
    } else {
      for (int i = 0; i < hidden; ++i) o[i] = silu(gate[i]) * up[i];
    }
  }
}

void add_inplace(float* x, const float* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace pagedllm::cpu
