// AVX2 form of elementwise.h's SwiGLU (compiled with -mavx2; called only when the CPU has it and
// not AVX-512). It repeats the portable kernel op for op, so the bits do not depend on the path.
// Scalar, it was 6 % of llama-110m q8_0's pp512 on the AVX2 paths.
#include <immintrin.h>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/exp_nonpositive.h"

namespace pagedllm::cpu {

namespace {

// elementwise.cpp's silu(g) * up on 8 lanes.
inline __m256 swiglu8(__m256 g, __m256 up) {
  const __m256 minus_abs_g = _mm256_or_ps(g, _mm256_set1_ps(-0.0f));
  const __m256 e = exp_nonpositive(minus_abs_g);
  const __m256 nonnegative = _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_GE_OQ);
  const __m256 numerator = _mm256_blendv_ps(e, _mm256_set1_ps(1.0f), nonnegative);
  const __m256 silu =
      _mm256_div_ps(_mm256_mul_ps(g, numerator), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_mul_ps(silu, up);
}

}  // namespace

void swiglu_row_avx2(const float* gate, const float* up, float* out, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    alignas(32) float g[8] = {}, u[8] = {}, o[8];
    for (int j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    _mm256_store_ps(o, swiglu8(_mm256_load_ps(g), _mm256_load_ps(u)));
    for (int j = i; j < n; ++j) out[j] = o[j - i];
  }
}

}  // namespace pagedllm::cpu
