// quantize_activations' AVX-512 row (compiled with -mavx512f -mavx512bw; called only when the CPU
// has them): the portable quantize_block op for op on 16 lanes. A decode step quantizes one row
// per matrix product on one thread, and libm's nearbyintf per element made that serial time a
// tenth of a llama-110m Q4_0 step.
//
// GCC 12's AVX-512 headers seed masked builtins with _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports at every use (GCC bug 105593); nothing here reads an
// undefined value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/quantized_activations.h"

namespace pagedllm::cpu {

namespace {

// max(|x|) over 32 values, NaN skipped as std::max(amax, NaN) skips it: _mm512_max_ps(a, b)
// returns b when either is NaN.
float block_amax(__m512 lo, __m512 hi) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512 m = _mm512_max_ps(_mm512_abs_ps(lo), zero);
  return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(hi), m));
}

// Codes of 16 values: nearest even, NaN to 0, clamped to [-127, 127].
__m512i codes16(__m512 x, __m512 inverse) {
  const __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(x, inverse),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 ordered = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
  const __m512 clamped =
      _mm512_min_ps(_mm512_max_ps(ordered, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvtps_epi32(clamped);
}

}  // namespace

void quantize_row_avx512(const float* x, int K, int block, int8_t* codes, float* scales,
                         int32_t* sum16) {
  constexpr int kChunk = 32;
  for (int b = 0; b < K / block; ++b) {
    // max is exact in any order, so a block's scale is the portable one for every block size.
    float amax = 0.0f;
    for (int c = b * block; c < (b + 1) * block; c += kChunk)
      amax = std::max(amax, block_amax(_mm512_loadu_ps(x + c), _mm512_loadu_ps(x + c + 16)));
    const float scale = amax / 127.0f;
    scales[b] = scale;
    const __m512 inverse = _mm512_set1_ps(scale != 0.0f ? 1.0f / scale : 0.0f);
    for (int c = b * block; c < (b + 1) * block; c += kChunk) {
      const __m512i q_lo = codes16(_mm512_loadu_ps(x + c), inverse);
      const __m512i q_hi = codes16(_mm512_loadu_ps(x + c + 16), inverse);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + c), _mm512_cvtepi32_epi8(q_lo));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + c + 16), _mm512_cvtepi32_epi8(q_hi));
      sum16[c / 16] = _mm512_reduce_add_epi32(q_lo);
      sum16[c / 16 + 1] = _mm512_reduce_add_epi32(q_hi);
    }
  }
}

}  // namespace pagedllm::cpu
