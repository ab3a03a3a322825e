// exp(x) for x <= 0 (softmax arguments, and e^-|g| in SiLU): a Cephes-style range reduction
// and polynomial written without libm and without fused operations, so that vector paths repeat
// it op for op. n is rounded by adding and subtracting 1.5 * 2^23 (round-to-nearest-even for
// |n| < 2^22, as roundscale's nearest mode), not by a call to nearbyint.
// Internal linkage: each ISA's file compiles its own copy, so no linker can pick a wider one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace pagedllm::cpu {

static inline float exp_nonpositive(float x) {
  x = std::max(x, -87.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &p, 4);
  bits += static_cast<int32_t>(n) * (1 << 23);
  std::memcpy(&p, &bits, 4);
  return p;
}

#ifdef __AVX512F__
// The same on 16 lanes, op for op (files compiled with -mavx512f only).
static inline __m512 exp_nonpositive(__m512 x) {
  // The zero-masked forms: the unmasked ones trip g++ 12's -Wmaybe-uninitialized.
  x = _mm512_maskz_max_ps(0xFFFF, x, _mm512_set1_ps(-87.0f));
  const __m512 round = _mm512_set1_ps(12582912.0f);
  const __m512 n = _mm512_sub_ps(
      _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), round), round);
  const __m512 r = _mm512_add_ps(_mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(0.693359375f))),
                                 _mm512_mul_ps(n, _mm512_set1_ps(2.12194440e-4f)));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  for (const float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f}) {
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(c));
  }
  p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r), _mm512_set1_ps(1.0f));
  const __m512i shift = _mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvttps_epi32(0xFFFF, n), 23);
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), shift));
}
#endif

#ifdef __AVX2__
// The same on 8 lanes, op for op (files compiled with -mavx2; no fused multiply-add, as above).
static inline __m256 exp_nonpositive(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 round = _mm256_set1_ps(12582912.0f);
  const __m256 n = _mm256_sub_ps(
      _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), round), round);
  const __m256 r = _mm256_add_ps(_mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f))),
                                 _mm256_mul_ps(n, _mm256_set1_ps(2.12194440e-4f)));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  for (const float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f}) {
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
  }
  p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r), _mm256_set1_ps(1.0f));
  const __m256i shift = _mm256_slli_epi32(_mm256_cvttps_epi32(n), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), shift));
}
#endif

}  // namespace pagedllm::cpu
