// Pieces shared by the AVX-512 int8 tiles (VNNI and AMX): the code unpacking of PackedMatrix's
// 4-, 5- and 6-bit panels, the sub-block scales and the per-super-block epilogue of gemm.h. Include
// only from files compiled with AVX-512 F/BW/VL.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/gemm.h"

// The super-block factors fill their pair arrays up to a count known only at run time, and the
// epilogue reads the same count: g++ 12 cannot see that and reports every read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pagedllm::cpu::int8 {

// A 4-bit line (8 k of 16 outputs) as two u8 lines: k-group 2g (low nibbles), 2g + 1 (high).
inline void unpack_nibbles(__m512i line, __m512i& low, __m512i& high) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  low = _mm512_and_si512(line, low_nibbles);
  high = _mm512_and_si512(_mm512_srli_epi16(line, 4), low_nibbles);
}

// A line of IQ4 indices (PackedMatrix::table_codes) as its two k-groups' u8 codes: the
// nibbles, then kIq4Codes by one in-lane shuffle each.
inline void unpack_table_codes(__m512i line, __m512i& low, __m512i& high) {
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Codes)));
  unpack_nibbles(line, low, high);
  low = _mm512_shuffle_epi8(table, low);
  high = _mm512_shuffle_epi8(table, high);
}

// A 2-bit line (16 k of 16 outputs, 64 bytes) as four u8 lines, k-groups 0..3.
inline void unpack_two_bits(const uint8_t* line, __m512i (&codes)[4]) {
  const __m512i two_bits = _mm512_set1_epi8(0x03), l = _mm512_load_si512(line);
  codes[0] = _mm512_and_si512(l, two_bits);
  codes[1] = _mm512_and_si512(_mm512_srli_epi16(l, 2), two_bits);
  codes[2] = _mm512_and_si512(_mm512_srli_epi16(l, 4), two_bits);
  codes[3] = _mm512_and_si512(_mm512_srli_epi16(l, 6), two_bits);
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

// K-group G (0..7) of a 5-bit chunk (32 k of 16 outputs, 320 bytes) as a u8 line, from the
// nibble line that holds it (G / 2: the low nibbles for even G) and the top-bit line (bit G).
// The 16-bit shifts carry no bit of one byte into the other's bit 4 (at most 4 left, 3 right).
template <int G>
inline __m512i five_bit_group(__m512i nibbles, __m512i tops) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F), top_bit = _mm512_set1_epi8(0x10);
  const __m512i nibble = G % 2 ? _mm512_srli_epi16(nibbles, 4) : nibbles;
  const __m512i top = G < 4 ? _mm512_slli_epi16(tops, 4 - G) : _mm512_srli_epi16(tops, G - 4);
  // nibble | (top & 0x10) in one ternary-logic op.
  return _mm512_ternarylogic_epi32(_mm512_and_si512(nibble, low_nibbles), top, top_bit, 0xF8);
}

// A whole 5-bit chunk as eight u8 lines, k-groups 0..7.
inline void unpack_five_bits(const uint8_t* chunk, __m512i (&codes)[8]) {
  const __m512i tops = _mm512_load_si512(chunk + 256);
  const __m512i n0 = _mm512_load_si512(chunk), n1 = _mm512_load_si512(chunk + 64);
  const __m512i n2 = _mm512_load_si512(chunk + 128), n3 = _mm512_load_si512(chunk + 192);
  codes[0] = five_bit_group<0>(n0, tops);
  codes[1] = five_bit_group<1>(n0, tops);
  codes[2] = five_bit_group<2>(n1, tops);
  codes[3] = five_bit_group<3>(n1, tops);
  codes[4] = five_bit_group<4>(n2, tops);
  codes[5] = five_bit_group<5>(n2, tops);
  codes[6] = five_bit_group<6>(n3, tops);
  codes[7] = five_bit_group<7>(n3, tops);
}

// Sub-block b's 16 integer scales of a panel, as int32.
inline __m512i sub_scales(const PackedMatrix& w, int p, int b) {
  // The factor streams are prefetched too, 8 sub-blocks ahead (about as far as the codes).
  const int8_t* sub = w.sub_scale_panel(p);
  _mm_prefetch(reinterpret_cast<const char*>(sub + (b + 8) * 16), _MM_HINT_T0);
  // The zero-masked form: the unmasked one trips g++ 12's -Wmaybe-uninitialized.
  return _mm512_maskz_cvtepi8_epi32(0xFFFF,
                                    _mm_load_si128(reinterpret_cast<const __m128i*>(sub + b * 16)));
}

// Sub-blocks b and b + 1's factors of a panel's 16 outputs as int16 pairs (b + 1's 0 without
// `second`), what vpmaddwd multiplies a row's xsum pairs by.
template <typename Factor>
inline __m512i adjacent_factors(const Factor* sub, int b, bool second) {
  const __m128i f0 = _mm_load_si128(reinterpret_cast<const __m128i*>(sub + b * 16));
  const __m128i f1 = second ? _mm_load_si128(reinterpret_cast<const __m128i*>(sub + (b + 1) * 16))
                            : _mm_setzero_si128();
  const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi8(f0, f1), _mm_unpacklo_epi8(f0, f1));
  return std::is_signed_v<Factor> ? _mm512_maskz_cvtepi8_epi16(0xFFFFFFFF, pairs)
                                  : _mm512_maskz_cvtepu8_epi16(0xFFFFFFFF, pairs);
}

// Super-block s's 16 f16 factors (d or dmin) of a panel, as f32.
inline __m512 super_factor(const uint16_t* super, int s) {
  _mm_prefetch(reinterpret_cast<const char*>(super + (s + 2) * 16), _MM_HINT_T0);
  return _mm512_maskz_cvtph_ps(0xFFFF,
                               _mm256_load_si256(reinterpret_cast<const __m256i*>(super + s * 16)));
}

// Super-block s's weight factors for panels [p, p + NP), as the epilogue takes them: d, dmin,
// and per sub-block pair the scales times -code_offset (the offset term; not where kUnit) and
// the mins, as int16 pairs.
template <int NP, bool kMins, bool kUnit>
struct SuperBlockFactors {
  static constexpr int kMaxPairs = 8;  // 16 sub-blocks of 16 in a 256-k super-block
  __m512 d[NP], dmin[NP];
  __m512i offset_scales[NP][kMaxPairs], mins[NP][kMaxPairs];
  SuperBlockFactors(const PackedMatrix& w, int p, int s, int pairs) {
    const int subs = w.sub_blocks_per_super(), b0 = s * subs;
    const __m512i offset = _mm512_set1_epi16(static_cast<int16_t>(-w.code_offset()));
    for (int q = 0; q < NP; ++q) {
      d[q] = super_factor(w.super_scale_panel(p + q), s);
      dmin[q] = kMins ? super_factor(w.super_min_panel(p + q), s) : _mm512_setzero_ps();
      if constexpr (kMins)
        _mm_prefetch(reinterpret_cast<const char*>(w.sub_min_panel(p + q) + (b0 + 2 * subs) * 16),
                     _MM_HINT_T0);
      for (int i = 0; i < pairs; ++i) {
        const int b = b0 + 2 * i;
        const bool second = 2 * i + 1 < subs;
        // |scale * offset| <= 128 * 128: an int16.
        if constexpr (!kUnit)
          offset_scales[q][i] =
              _mm512_mullo_epi16(adjacent_factors(w.sub_scale_panel(p + q), b, second), offset);
        if constexpr (kMins) mins[q][i] = adjacent_factors(w.sub_min_panel(p + q), b, second);
      }
    }
  }
};

// Sum over a super-block's sub-block pairs of factors (int16 pairs per output) times the row's
// xsum pairs: exact int32 per output.
inline __m512i pair_products(const __m512i* factors, const int32_t* xsum_pairs, int pairs) {
  __m512i sum = _mm512_setzero_si512();
  for (int i = 0; i < pairs; ++i)
    sum = _mm512_add_epi32(sum, _mm512_madd_epi16(factors[i], _mm512_set1_epi32(xsum_pairs[i])));
  return sum;
}

// The super-block's term t of gemm.h for 16 outputs of panel q, from the sum over its sub-blocks
// of scale * dot (isum before the offset term; add_offset false where the caller has added it or
// the codes have no offset).
template <int NP, bool kMins, bool kUnit>
inline __m512 super_block_term(__m512i isum, const SuperBlockFactors<NP, kMins, kUnit>& f, int q,
                               const SubBlockRowFactors& xf, int row, int s, bool add_offset) {
  const size_t i = xf.at(row, s);
  const int32_t* xsum_pairs = xf.pairs_at(row, s);
  if constexpr (kUnit) {
    if (add_offset) isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(xf.offset_xsum[i]));
  } else {
    if (add_offset)
      isum = _mm512_add_epi32(isum, pair_products(f.offset_scales[q], xsum_pairs, xf.pairs));
  }
  const __m512 x_scale = _mm512_set1_ps(xf.x_scale[i]);
  // The zero-masked forms: the unmasked ones trip g++ 12's -Wmaybe-uninitialized.
  __m512 t = _mm512_mul_ps(f.d[q], _mm512_mul_ps(x_scale, _mm512_maskz_cvtepi32_ps(0xFFFF, isum)));
  if constexpr (kMins) {
    const __m512i imin = pair_products(f.mins[q], xsum_pairs, xf.pairs);
    t = _mm512_sub_ps(
        t,
        _mm512_mul_ps(f.dmin[q], _mm512_mul_ps(x_scale, _mm512_maskz_cvtepi32_ps(0xFFFF, imin))));
  }
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
