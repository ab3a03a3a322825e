// AVX-512 forms of kv_store.h (compiled with -mavx512f -mavx512bw -mavx512vl).
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/kv_store.h"

namespace pagedllm::cpu {

namespace {

// f32_to_bf16 on 16 lanes, op for op: (bits + 0x7FFF + lsb) >> 16, or (bits >> 16) | 0x40 for
// NaN.
// (The zero-masked forms: the unmasked ones trip g++ 12's -Wmaybe-uninitialized.)
inline __m256i to_bf16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i high = _mm512_maskz_srli_epi32(0xFFFF, bits, 16);
  const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_maskz_srli_epi32(
      0xFFFF, _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __m512i quieted = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_maskz_cvtepi32_epi16(0xFFFF, _mm512_mask_blend_epi32(nan, rounded, quieted));
}

// Lanes [0, n) set.
inline __mmask16 first(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

}  // namespace

void round_to_bf16_avx512(const float* x, int n, uint16_t* out) {
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = first(n - i);
    _mm256_mask_storeu_epi16(out + i, m, to_bf16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void store_key_rows_bf16_avx512(const float* x, int width, int count, int D, uint16_t* kd, int ld) {
  // Token j's value for row d sits at x + j * width + d: one gather per row and 16 tokens.
  const __m512i token =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(width));
  for (int j0 = 0; j0 < count; j0 += 16) {
    const __mmask16 m = first(count - j0);
    const float* base = x + static_cast<size_t>(j0) * width;
    for (int d = 0; d < D; ++d) {
      const __m512 column = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, token, base + d, 4);
      _mm256_mask_storeu_epi16(kd + static_cast<size_t>(d) * ld + j0, m, to_bf16(column));
    }
  }
}

}  // namespace pagedllm::cpu
