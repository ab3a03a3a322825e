// AVX2 tile for block-quantized weights (compiled with -mavx2; also the path on AVX-512 CPUs
// without VNNI). Codes are widened to 16 bits so that vpmaddwd's products are exact (vpmaddubsw
// would saturate on Q8_0's u8 codes); the float epilogue per sub-block follows gemm.h's order.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

namespace {

// 8 outputs x 4 k of u8 codes (32 bytes) against 4 activation codes widened to 16 bits and
// repeated in each 64-bit lane: adds each output's two pair sums into lo (outputs 0-3) and hi
// (outputs 4-7).
inline void dot8(__m256i c, __m256i x, __m256i& lo, __m256i& hi) {
  lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(c)), x));
  hi = _mm256_add_epi32(hi,
                        _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(c, 1)), x));
}

// As the VNNI kernel: 2 KB ahead of the panel stream (p is the line about to be read).
inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + 2048, _MM_HINT_T0);
}

inline __m256i load32(const uint8_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}

// Activation codes k..k+3 of row m, widened to 16 bits, in each 64-bit lane.
inline __m256i activation_quad(const QuantizedActivations& xq, int m, int k) {
  return _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(xq.quad(m, k))));
}

// Outputs [8h, 8h + 8) of sub-block b's scales (or mins): f16 super-block factor times int8 (or
// u8) sub-block factor, the same exact f32 products as PackedMatrix::scale().
template <typename Factor>
inline __m256 factored(const uint16_t* super, const Factor* sub, int b, int super_step, int h) {
  if (h == 0) {  // the factor streams too, 8 sub-blocks ahead, as the VNNI kernel does
    _mm_prefetch(reinterpret_cast<const char*>(sub + (b + 8) * 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(super + ((b + 8) >> super_step) * 16), _MM_HINT_T0);
  }
  const __m128i f = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + b * 16 + 8 * h));
  const __m256i wide = std::is_signed_v<Factor> ? _mm256_cvtepi8_epi32(f) : _mm256_cvtepu8_epi32(f);
  const __m128i d =
      _mm_load_si128(reinterpret_cast<const __m128i*>(super + (b >> super_step) * 16 + 8 * h));
  return _mm256_mul_ps(_mm256_cvtph_ps(d), _mm256_cvtepi32_ps(wide));
}

// The 8 dot products in output order from the pair sums of dot8.
inline __m256i combine_pairs(__m256i lo, __m256i hi) {
  // hadd gives [o0 o1 o4 o5 | o2 o3 o6 o7].
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8);
}

// Rows [m, m + MR) of the tile against one panel.
template <int MR, bool kMins, int kBits>
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
    if constexpr (kBits == 6) {
      const __m256i low_nibbles = _mm256_set1_epi8(0x0F), top_bits = _mm256_set1_epi8(0x30);
      for (int k = k0; k < k0 + B; k += 16) {
        const uint8_t* chunk = u + static_cast<size_t>(k) * 12;
        for (int l = 0; l < 3; ++l) prefetch(chunk + 64 * l);
        for (int h = 0; h < 2; ++h) {
          const __m256i n0 = load32(chunk + 32 * h), n1 = load32(chunk + 64 + 32 * h);
          const __m256i top = load32(chunk + 128 + 32 * h);
          // Group g's top bits sit at bit 2g of top: move them to bits 4-5 and add the nibble.
          const __m256i codes[4] = {
              _mm256_or_si256(_mm256_and_si256(n0, low_nibbles),
                              _mm256_and_si256(_mm256_slli_epi16(top, 4), top_bits)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n0, 4), low_nibbles),
                              _mm256_and_si256(_mm256_slli_epi16(top, 2), top_bits)),
              _mm256_or_si256(_mm256_and_si256(n1, low_nibbles), _mm256_and_si256(top, top_bits)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n1, 4), low_nibbles),
                              _mm256_and_si256(_mm256_srli_epi16(top, 2), top_bits))};
          for (int r = 0; r < MR; ++r) {
            for (int g = 0; g < 4; ++g) {
              dot8(codes[g], activation_quad(xq, a.m0 + m + r, k + 4 * g), pairs[r][2 * h],
                   pairs[r][2 * h + 1]);
            }
          }
        }
      }
    } else if constexpr (kBits == 4) {
      const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
      for (int k = k0; k < k0 + B; k += 8) {
        const uint8_t* line = u + static_cast<size_t>(k) * 8;
        prefetch(line);
        for (int h = 0; h < 2; ++h) {
          const __m256i c = load32(line + 32 * h);
          const __m256i low = _mm256_and_si256(c, low_nibbles);
          const __m256i high = _mm256_and_si256(_mm256_srli_epi16(c, 4), low_nibbles);
          for (int r = 0; r < MR; ++r) {
            dot8(low, activation_quad(xq, a.m0 + m + r, k), pairs[r][2 * h], pairs[r][2 * h + 1]);
            dot8(high, activation_quad(xq, a.m0 + m + r, k + 4), pairs[r][2 * h],
                 pairs[r][2 * h + 1]);
          }
        }
      }
    } else {
      for (int k = k0; k < k0 + B; k += 4) {
        prefetch(u + static_cast<size_t>(k) * 16);
        for (int r = 0; r < MR; ++r) {
          const __m256i x = activation_quad(xq, a.m0 + m + r, k);
          dot8(load32(u + static_cast<size_t>(k) * 16), x, pairs[r][0], pairs[r][1]);
          dot8(load32(u + static_cast<size_t>(k) * 16 + 32), x, pairs[r][2], pairs[r][3]);
        }
      }
    }
    const int super_step = w.super_shift() - w.quant_shift();
    for (int r = 0; r < MR; ++r) {
      const int32_t xsum = xq.sum(a.m0 + m + r, k0, B);
      const float x_scale = xq.scale(a.m0 + m + r, k0);
      const __m256i correction = _mm256_set1_epi32(w.code_offset() * xsum);
      const __m256 xs = _mm256_set1_ps(x_scale);
      const __m256 min_factor = _mm256_set1_ps(x_scale * static_cast<float>(xsum));
      for (int h = 0; h < 2; ++h) {
        const __m256i dot = combine_pairs(pairs[r][2 * h], pairs[r][2 * h + 1]);
        const __m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(dot, correction));
        const __m256 scale =
            factored(w.super_scale_panel(panel), w.sub_scale_panel(panel), b, super_step, h);
        __m256 t = _mm256_mul_ps(scale, _mm256_mul_ps(xs, d));
        if constexpr (kMins) {
          const __m256 min =
              factored(w.super_min_panel(panel), w.sub_min_panel(panel), b, super_step, h);
          t = _mm256_sub_ps(t, _mm256_mul_ps(min, min_factor));
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

template <bool kMins, int kBits>
void dispatch(const TileArgs& a) {
  for (int q = 0; q < a.np; ++q) {
    for (int m = 0; m < a.mr; m += 2) {
      if (m + 1 < a.mr) {
        rows<2, kMins, kBits>(a, m, a.p + q);
      } else {
        rows<1, kMins, kBits>(a, m, a.p + q);
      }
    }
  }
}

}  // namespace

void gemm_int8_tile_avx2(const TileArgs& a) {
  with_int8_shape(*a.w, [&](auto mins, auto bits) { dispatch<mins.value, bits.value>(a); });
}

}  // namespace pagedllm::cpu
