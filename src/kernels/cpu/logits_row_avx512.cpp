// AVX-512 forms of logits_row.h (compiled with -mavx512f; called only when the CPU has it).
#include <immintrin.h>

#include <limits>

#include "kernels/cpu/exp_nonpositive.h"
#include "kernels/cpu/logits_row.h"

namespace pagedllm::cpu {

namespace {

inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// exp(x - shift) on the lanes of `mask`, 0 elsewhere and below -87.
inline __m512 exp_lanes(const float* x, __mmask16 mask, __m512 shift) {
  const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x), shift);
  const __mmask16 live = _mm512_mask_cmp_ps_mask(mask, d, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);
  return _mm512_maskz_mov_ps(live, exp_nonpositive(d));
}

}  // namespace

float row_max_avx512(const float* x, int64_t n) {
  const float lowest = -std::numeric_limits<float>::infinity();
  __m512 m = _mm512_set1_ps(lowest);
  int64_t i = 0;
  // Four running maxima over whole vectors, one chain each, then the tail (exact in any order).
  __m512 part[4] = {m, m, m, m};
  for (; i + 64 <= n; i += 64) {
    for (int v = 0; v < 4; ++v)
      part[v] = _mm512_maskz_max_ps(0xFFFF, _mm512_loadu_ps(x + i + 16 * v), part[v]);
  }
  m = _mm512_maskz_max_ps(0xFFFF, _mm512_maskz_max_ps(0xFFFF, part[0], part[1]),
                          _mm512_maskz_max_ps(0xFFFF, part[2], part[3]));
  for (; i < n; i += 16) {
    const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(lowest), first_lanes(n - i), x + i);
    m = _mm512_maskz_max_ps(0xFFFF, v, m);  // the zero-masked form: g++ 12 warns on the plain one
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, m);
  float best = lanes[0];
  for (float l : lanes) best = l > best ? l : best;
  return best;
}

void divide_row_avx512(float* x, int64_t n, float d) {
  const __m512 divisor = _mm512_set1_ps(d);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    _mm512_mask_storeu_ps(x + i, mask,
                          _mm512_maskz_div_ps(mask, _mm512_maskz_loadu_ps(mask, x + i), divisor));
  }
}

double exp_shifted_avx512(const float* x, int64_t n, float shift, float* out, double* block_sums) {
  const __m512 s = _mm512_set1_ps(shift);
  alignas(64) float lanes[16];
  double total = 0.0;
  for (int64_t start = 0, b = 0; start < n; start += kExpBlock, ++b) {
    const int64_t end = start + kExpBlock < n ? start + kExpBlock : n;
    __m512 acc = _mm512_setzero_ps();
    int64_t i = start;
    // Four vectors' exponentials side by side, then added to acc in order: each is a long chain
    // of dependent operations, and one at a time left the core waiting on their latency.
    for (; i + 64 <= end; i += 64) {
      __m512 e[4];
      for (int v = 0; v < 4; ++v) e[v] = exp_lanes(x + i + 16 * v, 0xFFFF, s);
      for (int v = 0; v < 4; ++v) {
        _mm512_storeu_ps(out + i + 16 * v, e[v]);
        acc = _mm512_add_ps(acc, e[v]);
      }
    }
    for (; i < end; i += 16) {
      const __mmask16 mask = first_lanes(end - i);
      const __m512 e = exp_lanes(x + i, mask, s);
      _mm512_mask_storeu_ps(out + i, mask, e);
      acc = _mm512_add_ps(acc, e);
    }
    _mm512_store_ps(lanes, acc);
    close_block(lanes, b, block_sums, total);
  }
  return total;
}

int64_t first_above_avx512(const float* x, int64_t n, float t) {
  const __m512 threshold = _mm512_set1_ps(t);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 mask = first_lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
    const auto above =
        static_cast<unsigned>(_mm512_mask_cmp_ps_mask(mask, v, threshold, _CMP_GT_OQ));
    if (above) return i + __builtin_ctz(above);
  }
  return n;
}

int64_t collect_above_avx512(const float* x, int64_t n, float t, int32_t* out) {
  const __m512 threshold = _mm512_set1_ps(t);
  const __m512i step = _mm512_set1_epi32(16);
  __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 16, index = _mm512_add_epi32(index, step)) {
    const __mmask16 mask = first_lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
    const __mmask16 above = _mm512_mask_cmp_ps_mask(mask, v, threshold, _CMP_GT_OQ);
    if (!above) continue;
    // Compress in a register and store all 16 lanes (out has room for 16 past n): the
    // compress-to-memory form is microcoded and slow on AMD's Zen 4.
    _mm512_storeu_si512(out + count, _mm512_maskz_compress_epi32(above, index));
    count += __builtin_popcount(static_cast<unsigned>(above));
  }
  return count;
}

}  // namespace pagedllm::cpu
