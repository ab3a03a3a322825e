// AVX2 tile for block-quantized weights (compiled with -mavx2; also the path on AVX-512 CPUs
// without VNNI). Codes are widened to 16 bits so that vpmaddwd's products are exact (vpmaddubsw
// would saturate on Q8_0's u8 codes); the float epilogue per sub-block follows gemm.h's order.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

namespace {

// 8 outputs x 4 k of u8 codes (32 bytes) against 4 activation codes widened to 16 bits and
// repeated in each 64-bit lane: adds each output's two pair sums into lo (outputs 0-3) and hi
// (outputs 4-7).
inline void dot8(const uint8_t* codes, __m256i x, __m256i& lo, __m256i& hi) {
  const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes));
  lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(c)), x));
  hi = _mm256_add_epi32(hi,
                        _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(c, 1)), x));
}

// The 8 dot products in output order from the pair sums of dot8.
inline __m256i combine_pairs(__m256i lo, __m256i hi) {
  // hadd gives [o0 o1 o4 o5 | o2 o3 o6 o7].
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8);
}

// Rows [m, m + MR) of the tile against one panel.
template <int MR, bool kMins>
void rows(const TileArgs& a, int m, int panel) {
  const PackedMatrix& w = *a.w;
  const QuantizedActivations& xq = *a.xq;
  const int B = w.quant_block();
  const uint8_t* u = w.u8_panel(panel);
  __m256 total[MR][2];
  for (int r = 0; r < MR; ++r) total[r][0] = total[r][1] = _mm256_setzero_ps();
  for (int b = 0; b < (a.K >> w.quant_shift()); ++b) {
    const int k0 = b * B;
    __m256i pairs[MR][4];
    for (int r = 0; r < MR; ++r) {
      for (int i = 0; i < 4; ++i) pairs[r][i] = _mm256_setzero_si256();
    }
    for (int k = k0; k < k0 + B; k += 4) {
      for (int r = 0; r < MR; ++r) {
        const __m256i x =
            _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(xq.quad(a.m0 + m + r, k))));
        dot8(u + static_cast<size_t>(k) * 16, x, pairs[r][0], pairs[r][1]);
        dot8(u + static_cast<size_t>(k) * 16 + 32, x, pairs[r][2], pairs[r][3]);
      }
    }
    const size_t s = static_cast<size_t>(b) * PackedMatrix::kPanel;
    for (int r = 0; r < MR; ++r) {
      const int32_t xsum = xq.sum(a.m0 + m + r, k0, B);
      const float x_scale = xq.scale(a.m0 + m + r, k0);
      const __m256i correction = _mm256_set1_epi32(w.code_offset() * xsum);
      const __m256 xs = _mm256_set1_ps(x_scale);
      const __m256 min_factor = _mm256_set1_ps(x_scale * static_cast<float>(xsum));
      for (int h = 0; h < 2; ++h) {
        const __m256i dot = combine_pairs(pairs[r][2 * h], pairs[r][2 * h + 1]);
        const __m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(dot, correction));
        __m256 t =
            _mm256_mul_ps(_mm256_load_ps(w.scale_panel(panel) + s + 8 * h), _mm256_mul_ps(xs, d));
        if constexpr (kMins) {
          t = _mm256_sub_ps(
              t, _mm256_mul_ps(_mm256_load_ps(w.min_panel(panel) + s + 8 * h), min_factor));
        }
        total[r][h] = _mm256_add_ps(total[r][h], t);
      }
    }
  }
  const int n0 = panel * PackedMatrix::kPanel;
  for (int r = 0; r < MR; ++r) {
    alignas(32) float out[16];
    _mm256_store_ps(out, total[r][0]);
    _mm256_store_ps(out + 8, total[r][1]);
    for (int j = 0; j < PackedMatrix::kPanel && n0 + j < a.n_end; ++j) {
      a.y[static_cast<size_t>(m + r) * a.ldy + n0 + j] = out[j] + (a.bias ? a.bias[n0 + j] : 0.0f);
    }
  }
}

template <bool kMins>
void dispatch(const TileArgs& a) {
  for (int q = 0; q < a.np; ++q) {
    for (int m = 0; m < a.mr; m += 2) {
      if (m + 1 < a.mr) {
        rows<2, kMins>(a, m, a.p + q);
      } else {
        rows<1, kMins>(a, m, a.p + q);
      }
    }
  }
}

}  // namespace

void gemm_int8_tile_avx2(const TileArgs& a) {
  if (a.w->has_mins()) {
    dispatch<true>(a);
  } else {
    dispatch<false>(a);
  }
}

}  // namespace pagedllm::cpu
