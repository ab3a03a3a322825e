// AVX2 tile for block-quantized weights (compiled with -mavx2; also the path on AVX-512 CPUs
// without VNNI). vpmaddubsw stands in for VNNI's vpdpbusd: it multiplies u8 codes by s8
// activation codes and adds adjacent pairs into 16 bits, and vpmaddwd by ones adds those pairs
// into each output's 32-bit lane. Its pair sums saturate past 32767, so each path keeps them in
// range, and every integer dot product stays exact:
//   4-bit codes (<= 15): |pair| <= 2 * 15 * 127 = 3810, so a whole 32-k sub-block (8 quads)
//     adds up in 16 bits before one widening;
//   6-bit codes (<= 63): |pair| <= 16002, two quads add up in 16 bits;
//   8-bit codes (Q8_0's u8 code + 128): multiplied as signed codes c - 128 by llama.cpp's sign
//     trick, |c - 128| (<= 128) times x with the code's sign, |pair| <= 32512; the dot product is
//     then that of c - 128, and the correction term uses code_offset - 128 (gemm.h's formula).
// A tile pass covers a panel (16 outputs) for up to 2 rows, or one half panel (8 outputs, one
// 32-bit lane each) for 3 to 6, so that the integer accumulators stay in registers (the float
// running sums are in L1, added to once per sub-block; llama-110m q8_0 pp512 on the AVX2 paths,
// alternating: 859-888 tok/s with 4 rows, 888-924 with 6); the float epilogue per
// sub-block follows gemm.h's order exactly, so the results equal the generic path's bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

namespace {

// Bytes ahead of the panel stream to prefetch, as the VNNI kernel does.
constexpr int kPrefetchBytes = 2048;

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
}

inline __m256i load32(const uint8_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}

// Activation codes k..k+3 of row m in every 32-bit lane.
inline __m256i activation_quad(const QuantizedActivations& xq, int m, int k) {
  return _mm256_set1_epi32(xq.quad(m, k));
}

// Outputs [8h, 8h + 8) of sub-block b's scales (or mins): f16 super-block factor times int8 (or
// u8) sub-block factor, the same exact f32 products as PackedMatrix::scale().
template <typename Factor>
inline __m256 factored(const uint16_t* super, const Factor* sub, int b, int super_step, int h) {
  _mm_prefetch(reinterpret_cast<const char*>(sub + (b + 8) * 16), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(super + ((b + 8) >> super_step) * 16), _MM_HINT_T0);
  const __m128i f = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + b * 16 + 8 * h));
  const __m256i wide = std::is_signed_v<Factor> ? _mm256_cvtepi8_epi32(f) : _mm256_cvtepu8_epi32(f);
  const __m128i d =
      _mm_load_si128(reinterpret_cast<const __m128i*>(super + (b >> super_step) * 16 + 8 * h));
  return _mm256_mul_ps(_mm256_cvtph_ps(d), _mm256_cvtepi32_ps(wide));
}

// MR rows by NH half panels from half h0 of `panel` (outputs [8 h0, 8 (h0 + NH))) over all of K.
// Every loop over rows and halves is unrolled by pragma (up to 8, as the 6-row case needs): without
// that g++ kept dot on the stack, a store and a reload per vpaddd (BM_GemmQuantized Q8_0 M=512:
// 136 -> 186 GOP/s).
template <int MR, int NH, bool kMins, int kBits>
void half_panels(const TileArgs& a, int panel, int h0) {
  const PackedMatrix& w = *a.w;
  const QuantizedActivations& xq = *a.xq;
  const SubBlockRowFactors& xf = *a.xf;
  const int B = w.quant_block();
  const int super_step = w.super_shift() - w.quant_shift();
  const uint8_t* u = w.u8_panel(panel) + 32 * h0;
  const __m256i ones = _mm256_set1_epi16(1);
  // The running sums live in memory (L1), added to once per sub-block: in registers they would
  // leave too few for 6 rows' integer accumulators.
  alignas(32) float total[MR][NH][8] = {};
  for (int b = 0; b < (a.K >> w.quant_shift()); ++b) {
    const int k0 = b * B;
    __m256i dot[MR][NH];  // 16-bit pair sums for 4-bit codes, 32-bit sums otherwise
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
      for (int h = 0; h < NH; ++h) dot[r][h] = _mm256_setzero_si256();
    }
    if constexpr (kBits == 4) {
      const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
      for (int k = k0; k < k0 + B; k += 8) {
        const uint8_t* line = u + static_cast<size_t>(k) * 8;
        prefetch(line);
        __m256i low[NH], high[NH];
#pragma GCC unroll 8
        for (int h = 0; h < NH; ++h) {
          const __m256i c = load32(line + 32 * h);
          low[h] = _mm256_and_si256(c, low_nibbles);
          high[h] = _mm256_and_si256(_mm256_srli_epi16(c, 4), low_nibbles);
        }
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          const __m256i x_low = activation_quad(xq, a.m0 + r, k);
          const __m256i x_high = activation_quad(xq, a.m0 + r, k + 4);
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) {
            const __m256i lo = _mm256_maddubs_epi16(low[h], x_low);
            const __m256i hi = _mm256_maddubs_epi16(high[h], x_high);
            dot[r][h] = _mm256_add_epi16(dot[r][h], _mm256_add_epi16(lo, hi));
          }
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
        for (int h = 0; h < NH; ++h) dot[r][h] = _mm256_madd_epi16(dot[r][h], ones);
      }
    } else if constexpr (kBits == 6) {
      const __m256i low_nibbles = _mm256_set1_epi8(0x0F), top_bits = _mm256_set1_epi8(0x30);
      for (int k = k0; k < k0 + B; k += 16) {
        const uint8_t* chunk = u + static_cast<size_t>(k) * 12;
        for (int l = 0; l < 3; ++l) prefetch(chunk + 64 * l);
#pragma GCC unroll 8
        for (int h = 0; h < NH; ++h) {
          const uint8_t* half = chunk + 32 * h;
          const __m256i n0 = load32(half), n1 = load32(half + 64), top = load32(half + 128);
          // Group g's top bits sit at bit 2g of top: move them to bits 4-5 and add the nibble.
          const __m256i codes[4] = {
              _mm256_or_si256(_mm256_and_si256(n0, low_nibbles),
                              _mm256_and_si256(_mm256_slli_epi16(top, 4), top_bits)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n0, 4), low_nibbles),
                              _mm256_and_si256(_mm256_slli_epi16(top, 2), top_bits)),
              _mm256_or_si256(_mm256_and_si256(n1, low_nibbles), _mm256_and_si256(top, top_bits)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n1, 4), low_nibbles),
                              _mm256_and_si256(_mm256_srli_epi16(top, 2), top_bits))};
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 2
            for (int g = 0; g < 4; g += 2) {
              const __m256i p0 =
                  _mm256_maddubs_epi16(codes[g], activation_quad(xq, a.m0 + r, k + 4 * g));
              const __m256i p1 =
                  _mm256_maddubs_epi16(codes[g + 1], activation_quad(xq, a.m0 + r, k + 4 * g + 4));
              dot[r][h] =
                  _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones));
            }
          }
        }
      }
    } else {
      const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
      for (int k = k0; k < k0 + B; k += 4) {
        const uint8_t* line = u + static_cast<size_t>(k) * 16;
        prefetch(line);
        __m256i signed_codes[NH], magnitude[NH];
#pragma GCC unroll 8
        for (int h = 0; h < NH; ++h) {
          signed_codes[h] = _mm256_xor_si256(load32(line + 32 * h), flip);
          magnitude[h] = _mm256_abs_epi8(signed_codes[h]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          const __m256i x = activation_quad(xq, a.m0 + r, k);
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) {
            const __m256i signed_x = _mm256_sign_epi8(x, signed_codes[h]);
            dot[r][h] = _mm256_add_epi32(
                dot[r][h], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude[h], signed_x), ones));
          }
        }
      }
    }
#pragma GCC unroll 8
    for (int h = 0; h < NH; ++h) {
      const __m256 scale =
          factored(w.super_scale_panel(panel), w.sub_scale_panel(panel), b, super_step, h0 + h);
      __m256 min = _mm256_setzero_ps();
      if constexpr (kMins) {
        min = factored(w.super_min_panel(panel), w.sub_min_panel(panel), b, super_step, h0 + h);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const size_t i = xf.at(a.m0 + r, b);
        // The 8-bit path's dot is over c - 128: its correction is (code_offset - 128) * xsum.
        const int32_t correction =
            kBits == 8 ? xf.correction[i] - 128 * xf.xsum[i] : xf.correction[i];
        const __m256 d =
            _mm256_cvtepi32_ps(_mm256_sub_epi32(dot[r][h], _mm256_set1_epi32(correction)));
        __m256 t = _mm256_mul_ps(scale, _mm256_mul_ps(_mm256_set1_ps(xf.x_scale[i]), d));
        if constexpr (kMins) {
          t = _mm256_sub_ps(t, _mm256_mul_ps(min, _mm256_set1_ps(xf.min_factor[i])));
        }
        _mm256_store_ps(total[r][h], _mm256_add_ps(_mm256_load_ps(total[r][h]), t));
      }
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < NH; ++h) {
    const int n0 = panel * PackedMatrix::kPanel + 8 * (h0 + h);
    const int valid = std::clamp(a.n_end - n0, 0, 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      float* y = a.y + static_cast<size_t>(r) * a.ldy + n0;
      for (int j = 0; j < valid; ++j) y[j] = total[r][h][j] + (a.bias ? a.bias[n0 + j] : 0.0f);
    }
  }
}

// Up to 2 rows take both halves of a panel in one pass (one stream over the panel, which decode
// reads from DRAM once); more rows one half at a time, so that their accumulators stay in
// registers.
template <int MR, bool kMins, int kBits>
void panels(const TileArgs& a) {
  for (int q = 0; q < a.np; ++q) {
    if constexpr (MR <= 2) {
      half_panels<MR, 2, kMins, kBits>(a, a.p + q, 0);
    } else {
      for (int h = 0; h < 2; ++h) half_panels<MR, 1, kMins, kBits>(a, a.p + q, h);
    }
  }
}

template <bool kMins, int kBits>
void dispatch(const TileArgs& a) {
  static_assert(kAvx2Rows == 6, "one case per row count");
  switch (a.mr) {
    case 1:
      return panels<1, kMins, kBits>(a);
    case 2:
      return panels<2, kMins, kBits>(a);
    case 3:
      return panels<3, kMins, kBits>(a);
    case 4:
      return panels<4, kMins, kBits>(a);
    case 5:
      return panels<5, kMins, kBits>(a);
    default:
      return panels<6, kMins, kBits>(a);
  }
}

}  // namespace

void gemm_int8_tile_avx2(const TileArgs& a) {
  // 4-bit sums stay in 16 bits for one sub-block of at most 32 k (see above).
  if (a.w->code_bits() == 4 && a.w->quant_block() > 32) return gemm_tile_generic(a);
  with_int8_shape(*a.w, [&](auto mins, auto bits) { dispatch<mins.value, bits.value>(a); });
}

}  // namespace pagedllm::cpu
