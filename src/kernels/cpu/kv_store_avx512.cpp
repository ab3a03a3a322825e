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

// Lanes [0, n) set (none for n <= 0).
inline __mmask16 first(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : n <= 0 ? 0u : (1u << n) - 1u);
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
  int j0 = 0;
  for (; j0 + 16 <= count; j0 += 16) {
    const float* base = x + static_cast<size_t>(j0) * width;
    for (int d = 0; d < D; ++d) {
      // The zero-masked form: the unmasked one trips g++ 12's -Wmaybe-uninitialized.
      const __m512 column =
          _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, token, base + d, 4);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(kd + static_cast<size_t>(d) * ld + j0),
                          to_bf16(column));
    }
  }
  // The last tokens (a decode step's one) one at a time: 16 values rounded as the value rows
  // are, then stored a row apart. A gather per row cost about 5 us per layer for a single token
  // (llama-110m decode, perf: 1.4 % of the step).
  for (int j = j0; j < count; ++j) {
    const float* values = x + static_cast<size_t>(j) * width;
    for (int d0 = 0; d0 < D; d0 += 16) {
      const int n = std::min(16, D - d0);
      uint16_t rounded[16];
      round_to_bf16_avx512(values + d0, n, rounded);
      for (int d = 0; d < n; ++d) kd[static_cast<size_t>(d0 + d) * ld + j] = rounded[d];
    }
  }
}

float quantize_q8_group_avx512(const float* x, int size, int8_t* codes) {
  const __mmask16 low = first(size), high = first(size - 16);
  const __m512 x0 = _mm512_maskz_loadu_ps(low, x), x1 = _mm512_maskz_loadu_ps(high, x + 16);
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  const auto abs = [&](__m512 v) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), magnitude));
  };
  // max(|x|, running): a NaN |x| keeps the running max, as std::max(amax, |x|) does.
  const __m512 running = _mm512_maskz_max_ps(0xFFFF, abs(x1), _mm512_setzero_ps());
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_maskz_max_ps(0xFFFF, abs(x0), running));
  float amax = 0.0f;
  for (const float lane : lanes) amax = std::max(amax, lane);  // exact in any order
  const float d = amax / 127.0f;
  const __m512 inverse = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m512 round = _mm512_set1_ps(12582912.0f);  // q8_code's 1.5 * 2^23
  for (int half = 0; half < 2; ++half) {
    const __mmask16 m = half == 0 ? low : high;
    if (m == 0) break;
    const __m512 scaled = _mm512_mul_ps(half == 0 ? x0 : x1, inverse);
    const __m512 q = _mm512_sub_ps(_mm512_add_ps(scaled, round), round);
    // max(q, -127) gives -127 for NaN, as std::max(-127, q) does.
    const __m512 clamped = _mm512_maskz_min_ps(
        0xFFFF, _mm512_maskz_max_ps(0xFFFF, q, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    _mm_mask_storeu_epi8(
        codes + 16 * half, m,
        _mm512_maskz_cvtepi32_epi8(0xFFFF, _mm512_maskz_cvttps_epi32(0xFFFF, clamped)));
  }
  return d;
}

}  // namespace pagedllm::cpu
