// AVX2 forms of kv_store.h's bf16 stores (compiled with -mavx2), 8 values at a time.
#include <immintrin.h>

#include <algorithm>

#include "format/dequant.h"
#include "kernels/cpu/kv_store.h"

namespace pagedllm::cpu {

namespace {

// f32_to_bf16 on 8 lanes, op for op: (bits + 0x7FFF + lsb) >> 16, or (bits >> 16) | 0x40 for
// NaN; the results (at most 0xFFFF) packed to 16 bits in order.
inline __m128i to_bf16(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i high = _mm256_srli_epi32(bits, 16);
  const __m256i lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i quieted = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  const __m256i chosen = _mm256_blendv_epi8(rounded, quieted, nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(chosen), _mm256_extracti128_si256(chosen, 1));
}

}  // namespace

void round_to_bf16_avx2(const float* x, int n, uint16_t* out) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), to_bf16(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) out[i] = f32_to_bf16(x[i]);
}

void store_key_rows_bf16_avx2(const float* x, int width, int count, int D, uint16_t* kd, int ld) {
  // 8 tokens by 8 rows at a time, transposed in registers: token j's value for row d sits at
  // x + j * width + d, and row d of the block takes 8 consecutive tokens.
  int j0 = 0;
  for (; j0 + 8 <= count; j0 += 8) {
    const float* base = x + static_cast<size_t>(j0) * width;
    int d0 = 0;
    for (; d0 + 8 <= D; d0 += 8) {
      __m256 t[8];
      for (int j = 0; j < 8; ++j)
        t[j] = _mm256_loadu_ps(base + static_cast<size_t>(j) * width + d0);
      // The 8 x 8 transpose: rows of tokens into rows of d.
      __m256 u[8], w[8];
      for (int j = 0; j < 8; j += 2) {
        u[j] = _mm256_unpacklo_ps(t[j], t[j + 1]);
        u[j + 1] = _mm256_unpackhi_ps(t[j], t[j + 1]);
      }
      for (int j = 0; j < 8; j += 4) {
        w[j] = _mm256_shuffle_ps(u[j], u[j + 2], 0x44);
        w[j + 1] = _mm256_shuffle_ps(u[j], u[j + 2], 0xEE);
        w[j + 2] = _mm256_shuffle_ps(u[j + 1], u[j + 3], 0x44);
        w[j + 3] = _mm256_shuffle_ps(u[j + 1], u[j + 3], 0xEE);
      }
      for (int d = 0; d < 4; ++d) {
        const __m256 low = _mm256_permute2f128_ps(w[d], w[d + 4], 0x20);
        const __m256 high = _mm256_permute2f128_ps(w[d], w[d + 4], 0x31);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(kd + static_cast<size_t>(d0 + d) * ld + j0),
                         to_bf16(low));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(kd + static_cast<size_t>(d0 + d + 4) * ld + j0),
                         to_bf16(high));
      }
    }
    for (int d = d0; d < D; ++d) {
      for (int j = j0; j < j0 + 8; ++j)
        kd[static_cast<size_t>(d) * ld + j] = f32_to_bf16(x[static_cast<size_t>(j) * width + d]);
    }
  }
  // The last tokens (a decode step's one) one at a time: 8 values rounded as the value rows
  // are, then stored a row apart.
  for (int j = j0; j < count; ++j) {
    const float* values = x + static_cast<size_t>(j) * width;
    for (int d0 = 0; d0 < D; d0 += 8) {
      const int n = std::min(8, D - d0);
      uint16_t rounded[8];
      round_to_bf16_avx2(values + d0, n, rounded);
      for (int d = 0; d < n; ++d) kd[static_cast<size_t>(d0 + d) * ld + j] = rounded[d];
    }
  }
}

}  // namespace pagedllm::cpu
