#include "kernels/cpu/logits_row.h"

#include <limits>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/exp_nonpositive.h"

namespace pagedllm::cpu {

namespace {

constexpr float kLowest = -87.0f;

float row_max_portable(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

double exp_shifted_portable(const float* x, int64_t n, float shift, float* out,
                            double* block_sums) {
  double total = 0.0;
  for (int64_t start = 0, b = 0; start < n; start += kExpBlock, ++b) {
    const int64_t end = start + kExpBlock < n ? start + kExpBlock : n;
    float lanes[16] = {};
    for (int64_t i = start; i < end; ++i) {
      const float d = x[i] - shift;
      const float e = d >= kLowest ? exp_nonpositive(d) : 0.0f;
      out[i] = e;
      lanes[(i - start) % 16] += e;
    }
    close_block(lanes, b, block_sums, total);
  }
  return total;
}

int64_t first_above_portable(const float* x, int64_t n, float t) {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > t) return i;
  return n;
}

int64_t collect_above_portable(const float* x, int64_t n, float t, int32_t* out) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > t) out[count++] = static_cast<int32_t>(i);
  return count;
}

}  // namespace

float row_max(const float* x, int64_t n) {
  const Isa isa = active_isa();
  if (isa >= Isa::kAvx512) return row_max_avx512(x, n);
  if (isa >= Isa::kAvx2) return row_max_avx2(x, n);
  return row_max_portable(x, n);
}

void divide_row(float* x, int64_t n, float d) {
  const Isa isa = active_isa();
  if (isa >= Isa::kAvx512) return divide_row_avx512(x, n, d);
  if (isa >= Isa::kAvx2) return divide_row_avx2(x, n, d);
  for (int64_t i = 0; i < n; ++i) x[i] /= d;
}

double exp_shifted(const float* x, int64_t n, float shift, float* out, double* block_sums) {
  const Isa isa = active_isa();
  if (isa >= Isa::kAvx512) return exp_shifted_avx512(x, n, shift, out, block_sums);
  if (isa >= Isa::kAvx2) return exp_shifted_avx2(x, n, shift, out, block_sums);
  return exp_shifted_portable(x, n, shift, out, block_sums);
}

int64_t first_above(const float* x, int64_t n, float t) {
  const Isa isa = active_isa();
  if (isa >= Isa::kAvx512) return first_above_avx512(x, n, t);
  if (isa >= Isa::kAvx2) return first_above_avx2(x, n, t);
  return first_above_portable(x, n, t);
}

}  // namespace pagedllm::cpu

namespace pagedllm::cpu {

int64_t collect_above(const float* x, int64_t n, float t, int32_t* out) {
  const Isa isa = active_isa();
  if (isa >= Isa::kAvx512) return collect_above_avx512(x, n, t, out);
  if (isa >= Isa::kAvx2) return collect_above_avx2(x, n, t, out);
  return collect_above_portable(x, n, t, out);
}

}  // namespace pagedllm::cpu
