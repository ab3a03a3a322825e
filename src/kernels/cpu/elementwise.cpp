#include "kernels/cpu/elementwise.h"

#include <cmath>

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

namespace {

// g * sigmoid(g) from e = exp(-|g|) <= 1, which cannot overflow: sigmoid(g) = 1 / (1 + e) for
// g >= 0 and e / (1 + e) below. swiglu_row_avx512 repeats it op for op.
inline float silu(float g) {
  const float e = exp_nonpositive(-std::abs(g));
  return g * (g >= 0.0f ? 1.0f : e) / (1.0f + e);
}

}  // namespace

void swiglu(const float* gate_up, int tokens, int hidden, float* out) {
  const Isa isa = active_isa();
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(tokens) * hidden > 65536)
  for (int t = 0; t < tokens; ++t) {
    const float* gate = gate_up + static_cast<size_t>(t) * 2 * hidden;
    const float* up = gate + hidden;
    float* o = out + static_cast<size_t>(t) * hidden;
    if (isa >= Isa::kAvx512) {
      swiglu_row_avx512(gate, up, o, hidden);
    } else if (isa >= Isa::kAvx2) {
      swiglu_row_avx2(gate, up, o, hidden);
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
