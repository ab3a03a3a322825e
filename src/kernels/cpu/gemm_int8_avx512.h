// Pieces shared by the AVX-512 int8 tiles (VNNI and AMX): the code unpacking of PackedMatrix's
// 4- and 6-bit panels and the per-sub-block float epilogue of gemm.h. Include only from files
// compiled with AVX-512 F/BW/VL.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu::int8 {

// A 4-bit line (8 k of 16 outputs) as two u8 lines: k-group 2g (low nibbles), 2g + 1 (high).
inline void unpack_nibbles(__m512i line, __m512i& low, __m512i& high) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  low = _mm512_and_si512(line, low_nibbles);
  high = _mm512_and_si512(_mm512_srli_epi16(line, 4), low_nibbles);
}

// A 6-bit chunk (16 k of 16 outputs, 192 bytes) as four u8 lines, k-groups 0..3.
inline void unpack_six_bits(const uint8_t* chunk, __m512i (&codes)[4]) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F), top_bits = _mm512_set1_epi8(0x30);
  const __m512i n0 = _mm512_load_si512(chunk), n1 = _mm512_load_si512(chunk + 64);
  const __m512i h = _mm512_load_si512(chunk + 128);
  // Group g's top bits sit at bit 2g of h: move them to bits 4-5 and add the nibble,
  // nibble | (top & 0x30) in one ternary-logic op.
  const auto join = [&](__m512i nibble, __m512i top) {
    return _mm512_ternarylogic_epi32(_mm512_and_si512(nibble, low_nibbles), top, top_bits, 0xF8);
  };
  codes[0] = join(n0, _mm512_slli_epi16(h, 4));
  codes[1] = join(_mm512_srli_epi16(n0, 4), _mm512_slli_epi16(h, 2));
  codes[2] = join(n1, h);
  codes[3] = join(_mm512_srli_epi16(n1, 4), _mm512_srli_epi16(h, 2));
}

// Sub-block b's 16 scales (or mins) of a panel: f16 super-block factor times int8 (or u8)
// sub-block factor, the same exact f32 products as PackedMatrix::scale().
template <typename Factor>
inline __m512 factored(const uint16_t* super, const Factor* sub, int b, int super_step) {
  // The factor streams are prefetched too, 8 sub-blocks ahead (about as far as the codes).
  _mm_prefetch(reinterpret_cast<const char*>(sub + (b + 8) * 16), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(super + ((b + 8) >> super_step) * 16), _MM_HINT_T0);
  const __m128i f = _mm_load_si128(reinterpret_cast<const __m128i*>(sub + b * 16));
  // The zero-masked forms: the unmasked ones trip g++ 12's -Wmaybe-uninitialized.
  const __m512i wide = std::is_signed_v<Factor> ? _mm512_maskz_cvtepi8_epi32(0xFFFF, f)
                                                : _mm512_maskz_cvtepu8_epi32(0xFFFF, f);
  const __m256i d =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(super + (b >> super_step) * 16));
  return _mm512_mul_ps(_mm512_maskz_cvtph_ps(0xFFFF, d), _mm512_maskz_cvtepi32_ps(0xFFFF, wide));
}

// Sub-block b's weight factors for panels [p, p + NP): scales, and mins where kMins.
template <int NP, bool kMins>
struct SubBlockFactors {
  __m512 scale[NP], min[NP];
  SubBlockFactors(const PackedMatrix& w, int p, int b, int super_step) {
    for (int q = 0; q < NP; ++q) {
      scale[q] = factored(w.super_scale_panel(p + q), w.sub_scale_panel(p + q), b, super_step);
      if constexpr (kMins) {
        min[q] = factored(w.super_min_panel(p + q), w.sub_min_panel(p + q), b, super_step);
      } else {
        min[q] = _mm512_setzero_ps();
      }
    }
  }
};

// One activation row's factors for sub-block b (gemm.h's SubBlockRowFactors), broadcast.
struct RowFactors {
  __m512i correction;  // code_offset * xsum
  __m512 x_scale, min_factor;
  RowFactors(const SubBlockRowFactors& f, int row, int b) {
    const size_t i = f.at(row, b);
    correction = _mm512_set1_epi32(f.correction[i]);
    x_scale = _mm512_set1_ps(f.x_scale[i]);
    min_factor = _mm512_set1_ps(f.min_factor[i]);
  }
};

// The sub-block's term t of gemm.h for 16 outputs, from their exact integer dot products.
template <bool kMins>
inline __m512 sub_block_term(__m512i dot, const RowFactors& x, __m512 scale, __m512 min) {
  // The zero-masked form: the unmasked one trips g++ 12's -Wmaybe-uninitialized.
  const __m512 d = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_sub_epi32(dot, x.correction));
  __m512 t = _mm512_mul_ps(scale, _mm512_mul_ps(x.x_scale, d));
  if constexpr (kMins) t = _mm512_sub_ps(t, _mm512_mul_ps(min, x.min_factor));
  return t;
}

// Writes total + bias for tile row m, panel p + q (columns past n_end left alone).
inline void store_outputs(const TileArgs& a, int m, int q, __m512 total) {
  const int n0 = (a.p + q) * PackedMatrix::kPanel;
  const int valid = std::clamp(a.n_end - n0, 0, PackedMatrix::kPanel);
  const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
  const __m512 bias = a.bias ? _mm512_maskz_loadu_ps(mask, a.bias + n0) : _mm512_setzero_ps();
  _mm512_mask_storeu_ps(a.y + static_cast<size_t>(m) * a.ldy + n0, mask,
                        _mm512_add_ps(total, bias));
}

}  // namespace pagedllm::cpu::int8
