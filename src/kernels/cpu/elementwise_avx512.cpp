// AVX-512 forms of elementwise.h's kernels (compiled with -mavx512f; called only when the CPU
// has it). Each repeats the portable kernel op for op, so the bits do not depend on the path.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/exp_nonpositive.h"
#include "kernels/cpu/rope.h"

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

// Lanes [0, n) set.
inline __mmask16 first(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// NeoX: x0 = head[i], x1 = head[i + half] for 16 i at a time.
void rope_neox(float* head, const float* cos, const float* sin, int half) {
  for (int i = 0; i < half; i += 16) {
    const __mmask16 m = first(half - i);
    const __m512 c = _mm512_maskz_loadu_ps(m, cos + i), s = _mm512_maskz_loadu_ps(m, sin + i);
    const __m512 x0 = _mm512_maskz_loadu_ps(m, head + i);
    const __m512 x1 = _mm512_maskz_loadu_ps(m, head + half + i);
    _mm512_mask_storeu_ps(head + i, m, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
    _mm512_mask_storeu_ps(head + half + i, m,
                          _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
  }
}

// Interleaved: 8 pairs (x0, x1) per vector. Lane 2j gets x0 * c - x1 * s and lane 2j + 1
// gets x1 * c + x0 * s, the portable sum in the other order (addition commutes exactly).
void rope_interleaved(float* head, const float* cos, const float* sin, int half) {
  const __m512i twice = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __mmask16 odd = 0xAAAA;
  for (int i = 0; i < half; i += 8) {
    const int pairs = std::min(8, half - i);
    const __mmask16 m = first(2 * pairs);
    const __m512 c =
        _mm512_maskz_permutexvar_ps(0xFFFF, twice, _mm512_maskz_loadu_ps(first(pairs), cos + i));
    const __m512 s =
        _mm512_maskz_permutexvar_ps(0xFFFF, twice, _mm512_maskz_loadu_ps(first(pairs), sin + i));
    const __m512 x = _mm512_maskz_loadu_ps(m, head + 2 * i);
    const __m512 swapped =
        _mm512_maskz_permute_ps(0xFFFF, x, _MM_SHUFFLE(2, 3, 0, 1));  // (x1, x0) per pair
    const __m512 xc = _mm512_mul_ps(x, c), xs = _mm512_mul_ps(swapped, s);
    // Even lanes subtract x1 * s, odd lanes add x0 * s.
    const __m512 rotated = _mm512_mask_add_ps(_mm512_sub_ps(xc, xs), odd, xc, xs);
    _mm512_mask_storeu_ps(head + 2 * i, m, rotated);
  }
}

}  // namespace

void rope_head_avx512(float* head, const float* cos, const float* sin, int half, RopeStyle style) {
  if (style == RopeStyle::kInterleaved) {
    rope_interleaved(head, cos, sin, half);
  } else {
    rope_neox(head, cos, sin, half);
  }
}

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
