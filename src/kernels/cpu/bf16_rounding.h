// bf16_activations.h's bf16_flushed on vector lanes, widened back to f32: to nearest even, a
// denormal or zero input to a zero of its sign, NaN quieted. What vdpbf16ps's inputs are when
// a path without it repeats its products (paged attention's bf16 order, attention_tile.h).
// Internal linkage: each ISA's file compiles its own copy.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/cpu/bf16_activations.h"

namespace pagedllm::cpu {

static inline float bf16_flushed_widened(float x) {
  const uint32_t bits = static_cast<uint32_t>(bf16_flushed(x)) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

#ifdef __AVX512F__
static inline __m512 bf16_flushed_widened(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  // The zero-masked shift: the unmasked one trips g++ 12's -Wmaybe-uninitialized.
  const __m512i lsb =
      _mm512_and_si512(_mm512_maskz_srli_epi32(0xFFFF, bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_and_si512(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), high);
  const __m512i quieted =
      _mm512_and_si512(_mm512_or_si512(bits, _mm512_set1_epi32(0x400000)), high);
  const __m512i sign = _mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 tiny =
      _mm512_testn_epi32_mask(bits, _mm512_set1_epi32(0x7F800000));  // zero exponent
  return _mm512_castsi512_ps(
      _mm512_mask_blend_epi32(tiny, _mm512_mask_blend_epi32(nan, rounded, quieted), sign));
}
#endif

#ifdef __AVX2__
static inline __m256 bf16_flushed_widened(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_and_si256(
      _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), high);
  const __m256i quieted =
      _mm256_and_si256(_mm256_or_si256(bits, _mm256_set1_epi32(0x400000)), high);
  const __m256i sign = _mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(0x80000000u)));
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256i tiny = _mm256_cmpeq_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7F800000)),
                                          _mm256_setzero_si256());
  const __m256 normal =
      _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quieted), nan);
  return _mm256_blendv_ps(normal, _mm256_castsi256_ps(sign), _mm256_castsi256_ps(tiny));
}
#endif

}  // namespace pagedllm::cpu
