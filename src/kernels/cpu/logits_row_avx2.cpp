// AVX2 forms of logits_row.h (compiled with -mavx2; called only when the CPU has it). Sums keep
// the 16 lanes of the other paths as two 8-lane halves.
#include <immintrin.h>

#include <limits>

#include "kernels/cpu/exp_nonpositive.h"
#include "kernels/cpu/logits_row.h"

namespace pagedllm::cpu {

namespace {

// Lanes [0, n) of 8 set, as a load/store mask.
inline __m256i first_lanes(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int count = n >= 8 ? 8 : static_cast<int>(n < 0 ? 0 : n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), index);
}

inline __m256 exp_lanes(const float* x, __m256i mask, __m256 shift) {
  const __m256 d = _mm256_sub_ps(_mm256_maskload_ps(x, mask), shift);
  const __m256 live = _mm256_and_ps(_mm256_castsi256_ps(mask),
                                    _mm256_cmp_ps(d, _mm256_set1_ps(-87.0f), _CMP_GE_OQ));
  return _mm256_and_ps(live, exp_nonpositive(d));
}

// exp_lanes on 8 whole lanes, with a plain load.
inline __m256 exp_whole(const float* x, __m256 shift) {
  const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x), shift);
  const __m256 live = _mm256_cmp_ps(d, _mm256_set1_ps(-87.0f), _CMP_GE_OQ);
  return _mm256_and_ps(live, exp_nonpositive(d));
}

}  // namespace

float row_max_avx2(const float* x, int64_t n) {
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 m = lowest;
  int64_t i = 0;
  // Four running maxima over whole vectors, one chain each, then the tail. max is exact, so the
  // order changes nothing (max_ps(v, m) keeps m where v is NaN, as the loop below does).
  __m256 part[4] = {lowest, lowest, lowest, lowest};
  for (; i + 32 <= n; i += 32) {
    for (int v = 0; v < 4; ++v) part[v] = _mm256_max_ps(_mm256_loadu_ps(x + i + 8 * v), part[v]);
  }
  m = _mm256_max_ps(_mm256_max_ps(part[0], part[1]), _mm256_max_ps(part[2], part[3]));
  for (; i < n; i += 8) {
    const __m256i mask = first_lanes(n - i);
    const __m256 v =
        _mm256_blendv_ps(lowest, _mm256_maskload_ps(x + i, mask), _mm256_castsi256_ps(mask));
    m = _mm256_max_ps(v, m);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float best = lanes[0];
  for (float l : lanes) best = l > best ? l : best;
  return best;
}

void divide_row_avx2(float* x, int64_t n, float d) {
  const __m256 divisor = _mm256_set1_ps(d);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), divisor));
  for (; i < n; ++i) x[i] /= d;
}

double exp_shifted_avx2(const float* x, int64_t n, float shift, float* out, double* block_sums) {
  const __m256 s = _mm256_set1_ps(shift);
  alignas(32) float lanes[16];
  double total = 0.0;
  for (int64_t start = 0, b = 0; start < n; start += kExpBlock, ++b) {
    const int64_t end = start + kExpBlock < n ? start + kExpBlock : n;
    __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
    int64_t i = start;
    // Two 16-element steps side by side, added to the lanes in order (as the AVX-512 path).
    for (; i + 32 <= end; i += 32) {
      __m256 e[4];
      for (int v = 0; v < 4; ++v) e[v] = exp_whole(x + i + 8 * v, s);
      for (int v = 0; v < 4; ++v) _mm256_storeu_ps(out + i + 8 * v, e[v]);
      low = _mm256_add_ps(low, e[0]);
      high = _mm256_add_ps(high, e[1]);
      low = _mm256_add_ps(low, e[2]);
      high = _mm256_add_ps(high, e[3]);
    }
    for (; i < end; i += 16) {
      const __m256i mask_low = first_lanes(end - i), mask_high = first_lanes(end - i - 8);
      const __m256 e_low = exp_lanes(x + i, mask_low, s);
      const __m256 e_high = exp_lanes(x + i + 8, mask_high, s);
      _mm256_maskstore_ps(out + i, mask_low, e_low);
      _mm256_maskstore_ps(out + i + 8, mask_high, e_high);
      low = _mm256_add_ps(low, e_low);
      high = _mm256_add_ps(high, e_high);
    }
    _mm256_store_ps(lanes, low);
    _mm256_store_ps(lanes + 8, high);
    close_block(lanes, b, block_sums, total);
  }
  return total;
}

int64_t first_above_avx2(const float* x, int64_t n, float t) {
  const __m256 threshold = _mm256_set1_ps(t);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int above =
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), threshold, _CMP_GT_OQ));
    if (above) return i + __builtin_ctz(static_cast<unsigned>(above));
  }
  for (; i < n; ++i)
    if (x[i] > t) return i;
  return n;
}

int64_t collect_above_avx2(const float* x, int64_t n, float t, int32_t* out) {
  const __m256 threshold = _mm256_set1_ps(t);
  int64_t count = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    auto above = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), threshold, _CMP_GT_OQ)));
    for (; above; above &= above - 1) out[count++] = static_cast<int32_t>(i + __builtin_ctz(above));
  }
  for (; i < n; ++i)
    if (x[i] > t) out[count++] = static_cast<int32_t>(i);
  return count;
}

}  // namespace pagedllm::cpu
