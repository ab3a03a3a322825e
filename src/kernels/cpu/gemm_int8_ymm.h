// The 256-bit tile for block-quantized weights, included by two files: gemm_int8_avx2.cpp
// (-mavx2; also the path on AVX-512 CPUs without VNNI) instantiates it without AVX-VNNI, and
// gemm_int8_avxvnni.cpp (-mavxvnni) with it, where one vpdpbusd takes 8-bit codes' four steps
// below (the 4- and 6-bit codes' 16-bit sums are the same in both). Everything here has internal
// linkage, so that each file keeps the copy compiled for its own instructions. Q4_0 and Q8_0
// with AVX-VNNI take tiles of their own (q4_0_vnni_rows, q8_0_vnni_rows) for 3 rows or more.
// On AVX2, vpmaddubsw stands in for VNNI's vpdpbusd: it multiplies u8 codes by s8
// activation codes and adds adjacent pairs into 16 bits, and vpmaddwd by ones adds those pairs
// into each output's 32-bit lane. Its pair sums saturate past 32767, so each path keeps them in
// range, and every integer dot product stays exact:
//   4-bit codes (<= 15): |pair| <= 2 * 15 * 127 = 3810, so a whole 32-k sub-block (8 quads)
//     adds up in 16 bits before one widening;
//   5-bit codes (<= 31) and 6-bit codes (<= 63): |pair| <= 16002, two quads add up in 16 bits;
//   8-bit codes (Q8_0's u8 code + 128, and IQ4's levels + 128, which the panel keeps as 4-bit
//     indices and a shuffle turns into codes): multiplied as signed codes c - 128 by llama.cpp's
//     sign trick, |c - 128| (<= 128) times x with the code's sign, |pair| <= 32512; the dot product
//     is then that of c - 128, and the offset term uses code_offset - 128 (gemm.h's formula). With
//     AVX-VNNI, vpdpbusd adds the four u8 x s8 products of each output's lane into 32 bits
//     without saturating, so the dot product is over the codes c and the offset term uses
//     code_offset (at most 32 * 255 * 127 a block).
// The vpmaddwd that widens the pair sums multiplies them by the sub-block's integer scales (by
// ones for Q8_0 and Q4_0), so the sums of a whole super-block are exact in 32 bits.
// A tile pass covers a panel (16 outputs) for up to 2 rows, or one half panel (8 outputs, one
// 32-bit lane each) for 3 to 8, so that the integer accumulators stay in registers (the float
// running sums are in L1, added to once per super-block; llama-110m q8_0 pp512 on the AVX2 paths,
// alternating: 859-888 tok/s with 4 rows, 888-924 with 6); the float epilogue per
// super-block follows gemm.h's order exactly, so the results equal the generic path's bit for bit.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <type_traits>

#include "format/block_quant.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/stream_prefetch.h"

// The super-block factors fill their pair arrays up to a count known only at run time, and the
// epilogue reads the same count: g++ 12 cannot see that and reports every read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pagedllm::cpu {

namespace {

inline __m256i load32(const uint8_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}

// Activation codes k..k+3 of tile row r in every 32-bit lane, from the tile's interleaved quads
// (TileArgs::quads, MR rows per k step): each row at a constant offset from one pointer, where
// addressing K-byte rows took a lea per row and k step from the ports the products use
// (BM_GemmQuantized Q8_0 M=512 on the AVX2 paths: see KERNELS.md). The k loops carry a pointer
// to their step's quads (`step`, quad g of row r at step[g * MR + r]), where an index from k took
// five scalar instructions per step.
inline __m256i activation_quad(const int32_t* step, int i) {
  return _mm256_set1_epi32(step[i]);
}

template <int MR>
inline const int32_t* quads_of_step(const TileArgs& a, int k) {
  return a.quads + static_cast<size_t>(k >> 2) * MR;
}

// Sub-block b's integer factors (scales or mins) of outputs [8h, 8h + 8), each repeated in both
// int16 halves of its output's lane: vpmaddwd by this multiplies a lane's two pair sums by it.
template <typename Factor>
inline __m256i repeated_factors(const Factor* sub, int b, int h) {
  _mm_prefetch(reinterpret_cast<const char*>(sub + (b + 8) * 16), _MM_HINT_T0);
  const __m128i f = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + b * 16 + 8 * h));
  const __m128i twice = _mm_unpacklo_epi8(f, f);
  return std::is_signed_v<Factor> ? _mm256_cvtepi8_epi16(twice) : _mm256_cvtepu8_epi16(twice);
}

// Sub-blocks b and b + 1's factors of outputs [8h, 8h + 8) as int16 pairs (b + 1's 0 without
// `second`), what vpmaddwd multiplies a row's xsum pairs by.
template <typename Factor>
inline __m256i adjacent_factors(const Factor* sub, int b, bool second, int h) {
  const __m128i f0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + b * 16 + 8 * h));
  const __m128i f1 =
      second ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + (b + 1) * 16 + 8 * h))
             : _mm_setzero_si128();
  const __m128i pairs = _mm_unpacklo_epi8(f0, f1);
  return std::is_signed_v<Factor> ? _mm256_cvtepi8_epi16(pairs) : _mm256_cvtepu8_epi16(pairs);
}

// The products of MR rows with four k-groups' 2-, 5- or 6-bit codes (16 k) of half panel h: two
// groups' pair sums add up in 16 bits (at most 2 * 2 * 63 * 127), then widen by the
// sub-block's scales into dot.
template <int MR, int NH>
__attribute__((always_inline)) inline void add_four_groups(const __m256i (&codes)[4],
                                                           const int32_t* step, __m256i factor,
                                                           int h, __m256i (&dot)[MR][NH]) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 2
    for (int g = 0; g < 4; g += 2) {
      const __m256i p0 = _mm256_maddubs_epi16(codes[g], activation_quad(step, g * MR + r));
      const __m256i p1 =
          _mm256_maddubs_epi16(codes[g + 1], activation_quad(step, (g + 1) * MR + r));
      dot[r][h] = _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(_mm256_add_epi16(p0, p1), factor));
    }
  }
}

// Outputs [8h, 8h + 8) of super-block s's f16 factor (d or dmin) as f32.
inline __m256 super_factor(const uint16_t* super, int s, int h) {
  _mm_prefetch(reinterpret_cast<const char*>(super + (s + 2) * 16), _MM_HINT_T0);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(super + s * 16 + 8 * h)));
}

// One super-block's weight factors for outputs [8h, 8h + 8), as the epilogue takes them:
// d, dmin, and per sub-block pair the scales times the code offset (for the offset term) and the
// mins, as int16 pairs.
template <bool kMins, bool kUnit>
struct SuperBlockFactors {
  static constexpr int kMaxPairs = 8;  // 16 sub-blocks of 16 in a 256-k super-block
  __m256 d, dmin;
  __m256i offset_scales[kMaxPairs], mins[kMaxPairs];
  SuperBlockFactors(const PackedMatrix& w, int panel, int s, int h, int pairs, int offset_shift) {
    const int subs = w.sub_blocks_per_super(), b0 = s * subs;
    d = super_factor(w.super_scale_panel(panel), s, h);
    dmin = kMins ? super_factor(w.super_min_panel(panel), s, h) : _mm256_setzero_ps();
    if constexpr (kMins)
      _mm_prefetch(reinterpret_cast<const char*>(w.sub_min_panel(panel) + (b0 + 2 * subs) * 16),
                   _MM_HINT_T0);
    for (int i = 0; i < pairs; ++i) {
      const int b = b0 + 2 * i;
      if (!kUnit && offset_shift >= 0) {
        offset_scales[i] = _mm256_slli_epi16(
            adjacent_factors(w.sub_scale_panel(panel), b, 2 * i + 1 < subs, h), offset_shift);
      }
      if constexpr (kMins)
        mins[i] = adjacent_factors(w.sub_min_panel(panel), b, 2 * i + 1 < subs, h);
    }
  }
};

// Sum over the super-block's sub-block pairs of factors (int16 pairs per output) times the row's
// xsum pairs: exact int32 per output.
inline __m256i pair_products(const __m256i* factors, const int32_t* xsum_pairs, int pairs) {
  __m256i sum = _mm256_setzero_si256();
  for (int i = 0; i < pairs; ++i)
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(factors[i], _mm256_set1_epi32(xsum_pairs[i])));
  return sum;
}

// The float epilogue of super-block s: each row's exact integer sums, less the offset term,
// scaled by x_scale and d (less the mins term) in gemm.h's order, and added to the running sums
// (stored by the first super-block). kPairs, where not 0, is the count of sub-block pairs
// (xf.pairs) known at compile time, so that the loops over them unroll.
template <int MR, int NH, bool kMins, int kBits, bool kUnit, int kPairs = 0>
inline void add_super_block(const TileArgs& a, int panel, int h0, int s, bool first,
                            int offset_shift, __m256i (&dot)[MR][NH], float (&total)[MR][NH][8]) {
  const SubBlockRowFactors& xf = *a.xf;
  const int pairs = kPairs ? kPairs : xf.pairs;
  // 8-bit products are over c - 128, or start at minus the offset term (vpdpbusd): none here.
  const bool offset = kBits != 8 && kBits != kTableCodes && offset_shift >= 0;
#pragma GCC unroll 8
  for (int h = 0; h < NH; ++h) {
    const SuperBlockFactors<kMins, kUnit> f(*a.w, panel, s, h0 + h, pairs, offset_shift);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const size_t i = xf.at(a.m0 + r, s);
      const int32_t* xsum_pairs = xf.pairs_at(a.m0 + r, s);
      __m256i isum = dot[r][h];
      if (kUnit && offset && kBits != 4) {  // offset_xsum holds the code offset's term
        isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(xf.offset_xsum[i]));
      } else if (!kUnit && offset) {
        isum = _mm256_sub_epi32(isum, pair_products(f.offset_scales, xsum_pairs, pairs));
      }
      const __m256 x_scale = _mm256_set1_ps(xf.x_scale[i]);
      __m256 t = _mm256_mul_ps(f.d, _mm256_mul_ps(x_scale, _mm256_cvtepi32_ps(isum)));
      if constexpr (kMins) {
        const __m256i imin = pair_products(f.mins, xsum_pairs, pairs);
        t = _mm256_sub_ps(t,
                          _mm256_mul_ps(f.dmin, _mm256_mul_ps(x_scale, _mm256_cvtepi32_ps(imin))));
      }
      const __m256 before = first ? _mm256_setzero_ps() : _mm256_load_ps(total[r][h]);
      _mm256_store_ps(total[r][h], _mm256_add_ps(before, t));
    }
  }
}

// The float totals of MR rows (a.y on) by NH half panels from half h0 of `panel`, plus the bias,
// into y, but for the columns at or past a.n_end.
template <int MR, int NH>
inline void store_totals(const TileArgs& a, int panel, int h0, const float (&total)[MR][NH][8]) {
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

// MR rows by NH half panels from half h0 of `panel` (outputs [8 h0, 8 (h0 + NH))) over all of K.
// Every loop over rows and halves is unrolled by pragma (up to 8, as the 8-row case needs): without
// that g++ kept dot on the stack, a store and a reload per vpaddd (BM_GemmQuantized Q8_0 M=512:
// 136 -> 186 GOP/s). Each sub-block's pair sums are multiplied by its integer scale in the
// vpmaddwd that widens them (by ones where kUnit), so that the float epilogue runs once per
// super-block (256 k for the k-quants; llama-110m q4_k_m pp512 on the AVX2 paths: see
// KERNELS.md).
template <bool kVnni, int MR, int NH, bool kMins, int kBits, bool kUnit>
void half_panels(const TileArgs& a, int panel, int h0) {
  const PackedMatrix& w = *a.w;
  const int B = w.quant_block(), subs = w.sub_blocks_per_super();
  const uint8_t* u = w.u8_panel(panel) + 32 * h0;
  const int8_t* sub_scales = w.sub_scale_panel(panel);
  // The sign trick's dot products are over c - 128, so its offset is code_offset - 128: 0, as
  // 8-bit codes come from Q8_0 and IQ4 alone (offset 128). vpdpbusd's are over the codes c, for
  // unit scales (Q8_0 alone; stacked with k-quants, the sign trick multiplies by their scales).
  // Offsets are 0 or powers of two (int8_ymm_tile).
  constexpr bool kEightBit = kBits == 8 || kBits == kTableCodes;
  constexpr bool kVnniDot = kVnni && kEightBit && kUnit;
  const int offset = kEightBit && !kVnniDot ? w.code_offset() - 128 : w.code_offset();
  const int offset_shift = offset ? std::countr_zero(static_cast<unsigned>(offset)) : -1;
  const __m256i ones = _mm256_set1_epi16(1);
  // The running sums live in memory (L1), added to once per super-block: in registers they would
  // leave too few for the rows' integer accumulators. So do the 4-bit path's sums of the
  // super-block's earlier sub-blocks. Neither is zeroed up front: the first super-block adds its
  // t to 0.0f in registers (the same bits as to a zeroed total) and the first sub-block stores
  // its sums; the zeroing was a rep stos of up to 512 bytes per call (perf: about 3 % of the
  // 8-row Q4_K tile's samples in llama-1b q4_k_m pp512).
  alignas(32) float total[MR][NH][8];
  alignas(32) int32_t earlier[MR][NH][8];
  for (int s = 0; s < (a.K >> w.super_shift()); ++s) {
    // isum (32-bit) for 6- and 8-bit codes; the sub-block's 16-bit pair sums for 4-bit codes.
    // Q4_0's sums start at minus its offset term: the 16-bit halves wrap, but each ends as a sum
    // of 16 products (c - 8) x, at most 16 * 8 * 127 in magnitude, so exact.
    // vpdpbusd's sums over the codes start at minus the offset term, code_offset * xsum.
    constexpr bool kOffsetHalves = kBits == 4 && kUnit;
    __m256i dot[MR][NH];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const size_t i = a.xf->at(a.m0 + r, s);
      const __m256i start = kOffsetHalves && offset_shift >= 0
                                ? _mm256_set1_epi32(a.xf->offset_halves[i])
                            : kVnniDot ? _mm256_set1_epi32(-a.xf->offset_xsum[i])
                                       : _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int h = 0; h < NH; ++h) dot[r][h] = start;
    }
    for (int j = 0; j < subs; ++j) {
      const int b = s * subs + j, k0 = b * B;
      __m256i factor[NH];
#pragma GCC unroll 8
      for (int h = 0; h < NH; ++h)
        factor[h] = kUnit ? ones : repeated_factors(sub_scales, b, h0 + h);
      if constexpr (kBits == 4) {
        const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
        const int32_t* step = quads_of_step<MR>(a, k0);
        for (int k = k0; k < k0 + B; k += 8, step += 2 * MR) {
          const uint8_t* line = u + static_cast<size_t>(k) * 8;
          prefetch_stream(line);
          __m256i low[NH], high[NH];
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) {
            const __m256i c = load32(line + 32 * h);
            low[h] = _mm256_and_si256(c, low_nibbles);
            high[h] = _mm256_and_si256(_mm256_srli_epi16(c, 4), low_nibbles);
          }
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) {
            const __m256i x_low = activation_quad(step, r);
            const __m256i x_high = activation_quad(step, MR + r);
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) {
              const __m256i lo = _mm256_maddubs_epi16(low[h], x_low);
              const __m256i hi = _mm256_maddubs_epi16(high[h], x_high);
              dot[r][h] = _mm256_add_epi16(dot[r][h], _mm256_add_epi16(lo, hi));
            }
          }
        }
        if (subs == 1) {
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) dot[r][h] = _mm256_madd_epi16(dot[r][h], factor[h]);
          }
          continue;
        }
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) {
            __m256i* sum = reinterpret_cast<__m256i*>(earlier[r][h]);
            const __m256i scaled = _mm256_madd_epi16(dot[r][h], factor[h]);
            _mm256_store_si256(sum, j == 0 ? scaled : _mm256_add_epi32(*sum, scaled));
            dot[r][h] = _mm256_setzero_si256();
          }
        }
        if (j + 1 == subs) {
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h)
              dot[r][h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(earlier[r][h]));
          }
        }
      } else if constexpr (kBits == 5) {
        // One 320-byte chunk of 32 k per sub-block (PackedMatrix keeps 5-bit codes to blocks of
        // 32): four nibble lines, each two k-groups, and the line of their top bits (bit g: group
        // g). Each half of the chunk (16 k) is then the 6-bit path's: its groups' top bits at bits
        // 0-3, the second half's shifted down there, moved to bit 4 and added to the nibbles. The
        // 16-bit shifts carry no bit of one byte into the other's bit 4.
        const __m256i low_nibbles = _mm256_set1_epi8(0x0F), top_bit = _mm256_set1_epi8(0x10);
        const uint8_t* chunk = u + static_cast<size_t>(k0) * 10;
        for (int l = 0; l < 5; ++l) prefetch_stream(chunk + 64 * l);
        const int32_t* step = quads_of_step<MR>(a, k0);
        // A run-time trip count (B / 16 = 2) keeps the loop rolled: unrolled, g++ kept 9 sums on
        // the stack (llama-110m q5_k_m pp512 on the AVX2 paths: 0.92x of the 6-bit layout). The
        // second pass shifts its top bits down by an immediate, not by 4 * i: vpsrlw by a
        // register count cost 9 % (BM_GemmQuantized Q5_K M=512 on one Zen 5 thread).
        for (int i = 0; i < B / 16; ++i, step += 4 * MR) {
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) {
            const uint8_t* half = chunk + 32 * h;
            const __m256i n0 = load32(half + 128 * i), n1 = load32(half + 128 * i + 64);
            const __m256i line = load32(half + 256);
            const __m256i tops = i ? _mm256_srli_epi16(line, 4) : line;
            const __m256i codes[4] = {
                _mm256_or_si256(_mm256_and_si256(n0, low_nibbles),
                                _mm256_and_si256(_mm256_slli_epi16(tops, 4), top_bit)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n0, 4), low_nibbles),
                                _mm256_and_si256(_mm256_slli_epi16(tops, 3), top_bit)),
                _mm256_or_si256(_mm256_and_si256(n1, low_nibbles),
                                _mm256_and_si256(_mm256_slli_epi16(tops, 2), top_bit)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n1, 4), low_nibbles),
                                _mm256_and_si256(_mm256_slli_epi16(tops, 1), top_bit))};
            add_four_groups<MR, NH>(codes, step, factor[h], h, dot);
          }
        }
      } else if constexpr (kBits == 2) {
        // One 64-byte line per 16 k, k-group g at bits 2g of each byte.
        const __m256i two_bits = _mm256_set1_epi8(0x03);
        const int32_t* step = quads_of_step<MR>(a, k0);
        for (int k = k0; k < k0 + B; k += 16, step += 4 * MR) {
          const uint8_t* line = u + static_cast<size_t>(k) * 4;
          prefetch_stream(line);
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) {
            const __m256i l = load32(line + 32 * h);
            const __m256i codes[4] = {_mm256_and_si256(l, two_bits),
                                      _mm256_and_si256(_mm256_srli_epi16(l, 2), two_bits),
                                      _mm256_and_si256(_mm256_srli_epi16(l, 4), two_bits),
                                      _mm256_and_si256(_mm256_srli_epi16(l, 6), two_bits)};
            add_four_groups<MR, NH>(codes, step, factor[h], h, dot);
          }
        }
      } else if constexpr (kBits == 6) {
        const __m256i low_nibbles = _mm256_set1_epi8(0x0F), top_bits = _mm256_set1_epi8(0x30);
        const int32_t* step = quads_of_step<MR>(a, k0);
        for (int k = k0; k < k0 + B; k += 16, step += 4 * MR) {
          const uint8_t* chunk = u + static_cast<size_t>(k) * 12;
          for (int l = 0; l < 3; ++l) prefetch_stream(chunk + 64 * l);
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
            add_four_groups<MR, NH>(codes, step, factor[h], h, dot);
          }
        }
      } else if constexpr (kBits == kTableCodes) {
        // IQ4's indices in the 4-bit layout, each turned into its level by one shuffle: u8
        // codes (level + 128) for vpdpbusd, signed levels for the sign trick.
        const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(
            reinterpret_cast<const __m128i*>(kVnniDot ? static_cast<const void*>(kIq4Codes)
                                                      : static_cast<const void*>(kIq4Levels))));
        const int32_t* step = quads_of_step<MR>(a, k0);
        for (int k = k0; k < k0 + B; k += 8, step += 2 * MR) {
          const uint8_t* line = u + static_cast<size_t>(k) * 8;
          prefetch_stream(line);
          // One k-group's codes at a time: both groups' at once took 4 registers a half panel,
          // and 8 rows' sums then spilled.
          __m256i indices[NH];
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) indices[h] = load32(line + 32 * h);
#pragma GCC unroll 2
          for (int g = 0; g < 2; ++g) {
            __m256i codes[NH], magnitude[NH];
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) {
              const __m256i nibbles = g ? _mm256_srli_epi16(indices[h], 4) : indices[h];
              codes[h] = _mm256_shuffle_epi8(table, _mm256_and_si256(nibbles, low_nibbles));
              if constexpr (!kVnniDot) magnitude[h] = _mm256_abs_epi8(codes[h]);
            }
#pragma GCC unroll 8
            for (int r = 0; r < MR; ++r) {
              const __m256i x = activation_quad(step, g * MR + r);
#pragma GCC unroll 8
              for (int h = 0; h < NH; ++h) {
                if constexpr (kVnniDot) {
                  dot[r][h] = _mm256_dpbusd_avx_epi32(dot[r][h], codes[h], x);
                } else {
                  const __m256i signed_x = _mm256_sign_epi8(x, codes[h]);
                  dot[r][h] = _mm256_add_epi32(
                      dot[r][h],
                      _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude[h], signed_x), factor[h]));
                }
              }
            }
          }
        }
      } else if constexpr (kVnniDot) {
        const int32_t* step = quads_of_step<MR>(a, k0);
        for (int k = k0; k < k0 + B; k += 4, step += MR) {
          const uint8_t* line = u + static_cast<size_t>(k) * 16;
          prefetch_stream(line);
          __m256i codes[NH];
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) codes[h] = load32(line + 32 * h);
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) {
            const __m256i x = activation_quad(step, r);
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h)
              dot[r][h] = _mm256_dpbusd_avx_epi32(dot[r][h], codes[h], x);
          }
        }
      } else {
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        const int32_t* step = quads_of_step<MR>(a, k0);
        for (int k = k0; k < k0 + B; k += 4, step += MR) {
          const uint8_t* line = u + static_cast<size_t>(k) * 16;
          prefetch_stream(line);
          __m256i signed_codes[NH], magnitude[NH];
#pragma GCC unroll 8
          for (int h = 0; h < NH; ++h) {
            signed_codes[h] = _mm256_xor_si256(load32(line + 32 * h), flip);
            magnitude[h] = _mm256_abs_epi8(signed_codes[h]);
          }
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) {
            const __m256i x = activation_quad(step, r);
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) {
              const __m256i signed_x = _mm256_sign_epi8(x, signed_codes[h]);
              dot[r][h] = _mm256_add_epi32(
                  dot[r][h],
                  _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude[h], signed_x), factor[h]));
            }
          }
        }
      }
    }
    // Q8_0 and Q4_0 run this every 32 k: there the first super-block is a case of its own, so
    // that the choice is not made per row (with it per row, g++ branched and zeroed a register
    // for each; see KERNELS.md). The k-quants run it every 256 k, where a second copy of it cost
    // more than it saved (llama-110m q4_k_m pp512 on Zen 3, paired: 0.99x).
    if (kUnit && s == 0) {
      add_super_block<MR, NH, kMins, kBits, kUnit>(a, panel, h0, s, true, offset_shift, dot, total);
    } else if (kUnit) {
      add_super_block<MR, NH, kMins, kBits, kUnit>(a, panel, h0, s, false, offset_shift, dot,
                                                   total);
    } else if (kBits == 6 && a.xf->pairs == 8) {
      // Q6_K (16 sub-blocks) with its 8 pairs known: its offset term's loops unroll
      // (BM_GemmQuantized Q6_K M=512 on Zen 3, paired: see KERNELS.md). Q4_K's 4 pairs the
      // same way read 0.98x: a second copy of the 4-bit tile's epilogue.
      add_super_block<MR, NH, kMins, kBits, kUnit, 8>(a, panel, h0, s, s == 0, offset_shift, dot,
                                                      total);
    } else {
      add_super_block<MR, NH, kMins, kBits, kUnit>(a, panel, h0, s, s == 0, offset_shift, dot,
                                                   total);
    }
  }
  store_totals<MR, NH>(a, panel, h0, total);
}

// Q4_0 with AVX-VNNI, rows [r0, r0 + MR) of an MS-row tile by half h of `panel`: one vpdpbusd
// per row for the low nibbles (k .. k + 3) and one for the high (k + 4 .. k + 7) of each 8 k,
// into two accumulators per row. In one accumulator the two would form a chain of vpdpbusd's
// latency that 8 rows do not hide (tried: 0.87-1.02x of the vpmaddubsw tile); two chains need
// two registers a row, so more than 5 rows go in two passes over the half panel (its codes are
// in L1 by the second; only the first pass fetches ahead). Against the vpmaddubsw tile this
// drops the 16-bit adds and the widening vpmaddwd, the multiplier pipes doing the same count of
// products (BM_GemmQuantized Q4_0 M=512 on one Zen 5 thread, paired: 219-233 -> 260-269 GOP/s).
// The sums start at minus the offset term, code_offset * xsum, so they are the same exact
// integers as that tile's. IQ4_NL (kTable) takes the same tile, its nibbles turned into codes by
// a table shuffle each.
template <int MS, int MR, bool kTable>
void q4_0_vnni_rows(const TileArgs& a, int panel, int h, int r0, bool fetch) {
  const PackedMatrix& w = *a.w;
  // Q4_0's block, a constant so that the k loop unrolls: with a run-time trip count g++ copied
  // every accumulator into another register and back per 8 k.
  constexpr int B = 32;
  const uint8_t* u = w.u8_panel(panel) + 32 * h;
  TileArgs rows = a;
  rows.m0 = a.m0 + r0;
  rows.y = a.y + static_cast<size_t>(r0) * a.ldy;
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  alignas(32) float total[MR][1][8];
  const int32_t* step = a.quads + r0;
  for (int s = 0; s < (a.K >> w.super_shift()); ++s) {
    __m256i low_sum[MR], high_sum[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      low_sum[r] = _mm256_set1_epi32(-a.xf->offset_xsum[a.xf->at(rows.m0 + r, s)]);
      high_sum[r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (int i = 0; i < B / 8; ++i, step += 2 * MS) {
      const uint8_t* line = u + static_cast<size_t>(s * B + 8 * i) * 8;
      if (fetch) prefetch_stream(line);
      const __m256i c = load32(line);
      __m256i low = _mm256_and_si256(c, low_nibbles);
      __m256i high = _mm256_and_si256(_mm256_srli_epi16(c, 4), low_nibbles);
      if constexpr (kTable) {
        const __m256i table = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Codes)));
        low = _mm256_shuffle_epi8(table, low);
        high = _mm256_shuffle_epi8(table, high);
      }
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        low_sum[r] = _mm256_dpbusd_avx_epi32(low_sum[r], low, activation_quad(step, r));
        high_sum[r] = _mm256_dpbusd_avx_epi32(high_sum[r], high, activation_quad(step, MS + r));
      }
    }
    __m256i dot[MR][1];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) dot[r][0] = _mm256_add_epi32(low_sum[r], high_sum[r]);
    // Offset shift -1: the offset term is in the sums already.
    if (s == 0) {
      add_super_block<MR, 1, false, 4, true>(rows, panel, h, s, true, -1, dot, total);
    } else {
      add_super_block<MR, 1, false, 4, true>(rows, panel, h, s, false, -1, dot, total);
    }
  }
  store_totals<MR, 1>(rows, panel, h, total);
}

// Q8_0 with AVX-VNNI, rows [r0, r0 + MR) of an MS-row tile by both halves of `panel`: each
// broadcast activation quad feeds two vpdpbusd (16 outputs), where the half panels above feed
// one each, so that the tile issued as many loads as products (BM_GemmQuantized Q8_0 M=512 on
// one Zen 5 thread, paired: 177-193 -> 283-305 GOP/s). Two accumulators a row fit 6 rows in the
// 16 registers; 7 and 8 rows go in two passes (M=6: 6 rows in one pass 262-297 GOP/s, 3 + 3
// 212-230).
template <int MS, int MR>
void q8_0_vnni_rows(const TileArgs& a, int panel, int r0, bool fetch) {
  const PackedMatrix& w = *a.w;
  constexpr int B = 32;  // Q8_0's block: a constant, so that the k loop unrolls
  const uint8_t* u = w.u8_panel(panel);
  TileArgs rows = a;
  rows.m0 = a.m0 + r0;
  rows.y = a.y + static_cast<size_t>(r0) * a.ldy;
  alignas(32) float total[MR][2][8];
  const int32_t* step = a.quads + r0;
  for (int s = 0; s < (a.K >> w.super_shift()); ++s) {
    __m256i dot[MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
      dot[r][0] = dot[r][1] = _mm256_set1_epi32(-a.xf->offset_xsum[a.xf->at(rows.m0 + r, s)]);
#pragma GCC unroll 8
    for (int i = 0; i < B / 4; ++i, step += MS) {
      const uint8_t* line = u + static_cast<size_t>(s * B + 4 * i) * 16;
      if (fetch) prefetch_stream(line);
      const __m256i c0 = load32(line), c1 = load32(line + 32);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m256i x = activation_quad(step, r);
        dot[r][0] = _mm256_dpbusd_avx_epi32(dot[r][0], c0, x);
        dot[r][1] = _mm256_dpbusd_avx_epi32(dot[r][1], c1, x);
      }
    }
    if (s == 0) {
      add_super_block<MR, 2, false, 8, true>(rows, panel, 0, s, true, -1, dot, total);
    } else {
      add_super_block<MR, 2, false, 8, true>(rows, panel, 0, s, false, -1, dot, total);
    }
  }
  store_totals<MR, 2>(rows, panel, 0, total);
}

// Up to 2 rows take both halves of a panel in one pass (one stream over the panel, which decode
// reads from DRAM once); more rows one half at a time, so that their accumulators stay in
// registers. With AVX-VNNI, Q4_0 and Q8_0 take their own tiles from 3 rows up, in groups of at
// most 5 and 6 rows, IQ4_NL Q4_0's.
template <bool kVnni, int MR, bool kMins, int kBits, bool kUnit>
void panels(const TileArgs& a) {
  if constexpr (kVnni && (kBits == 4 || kBits == kTableCodes) && kUnit && MR > 2) {
    if (a.w->quant_block() == 32) {
      constexpr int kFirst = MR <= 5 ? MR : (MR + 1) / 2;
      constexpr bool kTable = kBits == kTableCodes;
      for (int q = 0; q < a.np; ++q) {
        for (int h = 0; h < 2; ++h) {
          q4_0_vnni_rows<MR, kFirst, kTable>(a, a.p + q, h, 0, h == 0);
          if constexpr (kFirst < MR)
            q4_0_vnni_rows<MR, MR - kFirst, kTable>(a, a.p + q, h, kFirst, false);
        }
      }
      return;
    }
  }
  if constexpr (kVnni && kBits == 8 && kUnit && MR > 2) {
    if (a.w->quant_block() == 32) {
      constexpr int kFirst = MR <= 6 ? MR : (MR + 1) / 2;
      for (int q = 0; q < a.np; ++q) {
        q8_0_vnni_rows<MR, kFirst>(a, a.p + q, 0, true);
        if constexpr (kFirst < MR) q8_0_vnni_rows<MR, MR - kFirst>(a, a.p + q, kFirst, false);
      }
      return;
    }
  }
  for (int q = 0; q < a.np; ++q) {
    if constexpr (MR <= 2) {
      half_panels<kVnni, MR, 2, kMins, kBits, kUnit>(a, a.p + q, 0);
    } else {
      for (int h = 0; h < 2; ++h) half_panels<kVnni, MR, 1, kMins, kBits, kUnit>(a, a.p + q, h);
    }
  }
}

template <bool kVnni, bool kMins, int kBits, bool kUnit>
void dispatch(const TileArgs& a) {
  static_assert(kAvx2Int8Rows == 8, "one case per row count");
  switch (a.mr) {
    case 1:
      return panels<kVnni, 1, kMins, kBits, kUnit>(a);
    case 2:
      return panels<kVnni, 2, kMins, kBits, kUnit>(a);
    case 3:
      return panels<kVnni, 3, kMins, kBits, kUnit>(a);
    case 4:
      return panels<kVnni, 4, kMins, kBits, kUnit>(a);
    case 5:
      return panels<kVnni, 5, kMins, kBits, kUnit>(a);
    case 6:
      return panels<kVnni, 6, kMins, kBits, kUnit>(a);
    case 7:
      return panels<kVnni, 7, kMins, kBits, kUnit>(a);
    default:
      return panels<kVnni, 8, kMins, kBits, kUnit>(a);
  }
}

template <bool kVnni>
void int8_ymm_tile(const TileArgs& a) {
  // 4-bit sums stay in 16 bits for one sub-block of at most 32 k (see above); the offset term
  // shifts the scales by log2 of the code offset; the running sums start at the first
  // super-block, so a product without one goes to the generic path.
  const int offset = a.w->code_offset();
  if ((a.w->code_bits() == 4 && a.w->quant_block() > 32) || (offset & (offset - 1)) != 0 ||
      (a.w->code_bits() == 8 && offset != 128) ||
      (a.w->code_bits() == 4 && !a.w->has_mins() && a.w->unit_sub_scales() &&
       a.w->sub_blocks_per_super() != 1) ||
      (a.K >> a.w->super_shift()) == 0)
    return gemm_tile_generic(a);
  with_int8_shape(*a.w, [&](auto mins, auto bits) {
    if (!mins.value && a.w->unit_sub_scales()) {
      dispatch<kVnni, false, bits.value, true>(a);
    } else {
      dispatch<kVnni, mins.value, bits.value, false>(a);
    }
  });
}

}  // namespace

}  // namespace pagedllm::cpu
