#include "kernels/cpu/rope.h"

#include <cmath>

#include "kernels/cpu/cpu_features.h"

namespace pagedllm::cpu {

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

}  // namespace pagedllm::cpu
