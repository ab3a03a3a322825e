// AVX-512 forms of elementwise.h's kernels (compiled with -mavx512f; called only when the CPU
// has it). Each repeats the portable kernel op for op, so the bits do not depend on the path.
#include <immintrin.h>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/exp_nonpositive.h"

namespace pagedllm::cpu {

namespace {

// elementwise.cpp's silu(g) * up.
inline __m512 swiglu16(__m512 g, __m512 up) {
  const __m512 minus_abs_g = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(g), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  const __m512 e = exp_nonpositive(minus_abs_g);
  const __mmask16 nonnegative = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_GE_OQ);
  const __m512 numerator = _mm512_mask_mov_ps(e, nonnegative, _mm512_set1_ps(1.0f));
  const __m512 silu =
      _mm512_div_ps(_mm512_mul_ps(g, numerator), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
  return _mm512_mul_ps(silu, up);
}

}  // namespace

void swiglu_row_avx512(const float* gate, const float* up, float* out, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, swiglu16(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  }
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(
        out + i, tail,
        swiglu16(_mm512_maskz_loadu_ps(tail, gate + i), _mm512_maskz_loadu_ps(tail, up + i)));
  }
}

}  // namespace pagedllm::cpu
