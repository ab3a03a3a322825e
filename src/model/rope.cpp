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

}  // namespace pagedllm
