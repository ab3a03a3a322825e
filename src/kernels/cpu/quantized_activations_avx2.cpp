// quantize_activations' AVX2 row (compiled with -mavx2; called only when the CPU has it): the
// portable quantize_block op for op on 8 lanes. A prefill quantizes every row before each
// block-quantized product, and libm's nearbyintf per element made that a few percent of an AVX2
// prefill.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/quantized_activations.h"

namespace pagedllm::cpu {

namespace {

// max(|x|) over 32 values, NaN skipped as std::max(amax, NaN) skips it: _mm256_max_ps(a, b)
// returns b when either is NaN.
float block_amax(const __m256 (&v)[4]) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (const __m256& x : v) m = _mm256_max_ps(_mm256_andnot_ps(sign, x), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// Codes of 8 values: nearest even, NaN to 0, clamped to [-127, 127].
__m256i codes8(__m256 x, __m256 inverse) {
  const __m256 v =
      _mm256_round_ps(_mm256_mul_ps(x, inverse), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 ordered = _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_ORD_Q), v);
  const __m256 clamped =
      _mm256_min_ps(_mm256_max_ps(ordered, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(clamped);
}

int32_t sum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void quantize_row_avx2(const float* x, int K, int block, int8_t* codes, float* scales,
                       int32_t* sum16) {
  constexpr int kChunk = 32;
  for (int b = 0; b < K / block; ++b) {
    // max is exact in any order, so a block's scale is the portable one for every block size.
    float amax = 0.0f;
    for (int c = 0; c < block; c += kChunk) {
      const float* xc = x + b * block + c;
      const __m256 v[4] = {_mm256_loadu_ps(xc), _mm256_loadu_ps(xc + 8), _mm256_loadu_ps(xc + 16),
                           _mm256_loadu_ps(xc + 24)};
      amax = std::max(amax, block_amax(v));
    }
    const float scale = amax / 127.0f;
    scales[b] = scale;
    const __m256 inverse = _mm256_set1_ps(scale != 0.0f ? 1.0f / scale : 0.0f);
    for (int c = b * block; c < (b + 1) * block; c += kChunk) {
      __m256i q[4];
      for (int i = 0; i < 4; ++i) q[i] = codes8(_mm256_loadu_ps(x + c + 8 * i), inverse);
      // Pack 32 int32 codes to int8 in order: the packs interleave 128-bit lanes, the permute
      // puts them back.
      const __m256i words = _mm256_packs_epi32(q[0], q[1]), words2 = _mm256_packs_epi32(q[2], q[3]);
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(words, words2),
                                                        _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + c), bytes);
      sum16[c / 16] = sum8(_mm256_add_epi32(q[0], q[1]));
      sum16[c / 16 + 1] = sum8(_mm256_add_epi32(q[2], q[3]));
    }
  }
}

}  // namespace pagedllm::cpu
