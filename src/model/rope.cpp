#include "model/rope.h"

#include <cmath>
#include <numbers>

namespace pagedllm {

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

void mrope_angles(std::span<const int32_t> positions, int64_t stride, int64_t tokens,
                  std::span<const float> inv_freq, std::span<const int> sections,
                  cpu::RopeAngles& out) {
  const auto half = static_cast<int64_t>(inv_freq.size());
  // The position row each frequency reads.
  std::vector<int64_t> row_of(static_cast<size_t>(half), 2);
  for (int64_t i = 0, end = 0, row = 0; row < 2; ++row) {
    end += sections[static_cast<size_t>(row)];
    for (; i < end && i < half; ++i) row_of[static_cast<size_t>(i)] = row;
  }
  out.half = static_cast<int>(half);
  out.cos.resize(static_cast<size_t>(tokens * half));
  out.sin.resize(out.cos.size());
#pragma omp parallel for schedule(static) if (tokens > 8)
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double pos =
          positions[static_cast<size_t>(row_of[static_cast<size_t>(i)] * stride + t)];
      const double angle = pos * static_cast<double>(inv_freq[static_cast<size_t>(i)]);
      out.cos[static_cast<size_t>(t * half + i)] = static_cast<float>(std::cos(angle));
      out.sin[static_cast<size_t>(t * half + i)] = static_cast<float>(std::sin(angle));
    }
  }
}

}  // namespace pagedllm
