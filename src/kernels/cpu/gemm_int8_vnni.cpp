// AVX-512 VNNI tile for block-quantized weights (compiled with -mavx512vnni; called only when
// the CPU has it). One vpdpbusd multiplies a panel's u8 codes for 4 consecutive k of 16 outputs
// by 4 broadcast activation codes: 64 exact products per instruction, against 16 for an f32
// FMA. Each sub-block's dot products are multiplied by its integer scales (vpmulld) into the
// super-block's exact sum, and the float epilogue per super-block follows gemm.h's order exactly.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/gemm_int8_avx512.h"
#include "kernels/cpu/stream_prefetch.h"

namespace pagedllm::cpu {

namespace {

// One vpdpbusd per row and panel for the 4 k from k (line: the panel's codes for them).
template <int MR, int NP>
inline void dot_group(const QuantizedActivations& xq, int m0, int k, const __m512i (&line)[NP],
                      __m512i (&dot)[MR][NP]) {
  for (int m = 0; m < MR; ++m) {
    const __m512i x = _mm512_set1_epi32(xq.quad(m0 + m, k));
    for (int q = 0; q < NP; ++q) dot[m][q] = _mm512_dpbusd_epi32(dot[m][q], line[q], x);
  }
}

template <int MR, int NP, bool kMins, int kBits, bool kUnit>
void tile(const TileArgs& a) {
  const PackedMatrix& w = *a.w;
  const QuantizedActivations& xq = *a.xq;
  // Unit scales come from Q8_0 and Q4_0 alone (PackedMatrix): blocks of 32 k, one per
  // super-block. As constants they let the block's k loop unroll, so that g++ keeps each
  // accumulator in one register (it copied every one in and out of another per 4-k group) and
  // the super-block index needs no division (BM_GemmQuantized Q8_0 M=512 N=3072 K=2048, one
  // thread, alternating: 367-390 -> 486-494 GOP/s).
  const int B = kUnit ? 32 : w.quant_block();
  const int sub_blocks = a.K >> w.quant_shift();
  const int subs = kUnit ? 1 : w.sub_blocks_per_super();
  const int subs_shift = kUnit ? 0 : w.super_shift() - w.quant_shift();  // subs is a power of 2
  __m512 total[MR][NP];
  for (int m = 0; m < MR; ++m) {
    for (int q = 0; q < NP; ++q) total[m][q] = _mm512_setzero_ps();
  }
  // The super-block's sum of scale * dot so far (in L1: registers are the dot products').
  alignas(64) int32_t isum[MR][NP][16] = {};
  for (int b = 0; b < sub_blocks; ++b) {
    const int k0 = b * B;
    // Few rows leave vpdpbusd's latency exposed: alternate k-groups between two accumulator
    // sets then (integer sums, so the result is the same).
    constexpr int kChains = MR <= 2 ? 2 : 1;
    __m512i dot[kChains][MR][NP];
    for (int c = 0; c < kChains; ++c) {
      for (int m = 0; m < MR; ++m) {
        // Unit scales (Q8_0, Q4_0: a super-block every 32 k): the block's first chain starts at
        // the offset term, -offset * xsum (exact int32), instead of subtracting it after, one
        // operation fewer per block in an epilogue that runs every 8 vpdpbusd.
        const __m512i start = kUnit && c == 0
                                  ? _mm512_set1_epi32(-a.xf->offset_xsum[a.xf->at(a.m0 + m, b)])
                                  : _mm512_setzero_si512();
        for (int q = 0; q < NP; ++q) dot[c][m][q] = start;
      }
    }
    if constexpr (kBits == 5) {
      // A 32-k chunk per sub-block (PackedMatrix keeps 5-bit codes to sub-blocks of 32): its
      // nibble lines one at a time, so that at most two groups' codes take registers.
      const auto pair = [&](auto line) __attribute__((always_inline)) {
        constexpr int kLine = decltype(line)::value;
        __m512i even[NP], odd[NP];
        for (int q = 0; q < NP; ++q) {
          const uint8_t* chunk = w.u8_panel(a.p + q) + static_cast<size_t>(k0) * 10;
          if constexpr (kLine == 0) {
            for (int l = 0; l < 5; ++l) prefetch_stream(chunk + 64 * l);
          }
          const __m512i nibbles = _mm512_load_si512(chunk + 64 * kLine);
          const __m512i tops = _mm512_load_si512(chunk + 256);
          even[q] = int8::five_bit_group<2 * kLine>(nibbles, tops);
          odd[q] = int8::five_bit_group<2 * kLine + 1>(nibbles, tops);
        }
        dot_group<MR, NP>(xq, a.m0, k0 + 8 * kLine, even, dot[0]);
        dot_group<MR, NP>(xq, a.m0, k0 + 8 * kLine + 4, odd, dot[kChains - 1]);
      };
      pair(std::integral_constant<int, 0>{});
      pair(std::integral_constant<int, 1>{});
      pair(std::integral_constant<int, 2>{});
      pair(std::integral_constant<int, 3>{});
    } else if constexpr (kBits == 6 || kBits == 2) {
      for (int i = 0; i < B / 16; ++i) {
        const int k = k0 + 16 * i;
        __m512i codes[4][NP];
        for (int q = 0; q < NP; ++q) {
          // 192 bytes per 16 k for 6-bit codes, one 64-byte line for 2-bit ones.
          const uint8_t* chunk = w.u8_panel(a.p + q) + static_cast<size_t>(k) * kBits * 2;
          for (int l = 0; l < kBits / 2; ++l) prefetch_stream(chunk + 64 * l);
          __m512i groups[4];
          if constexpr (kBits == 2) {
            int8::unpack_two_bits(chunk, groups);
          } else {
            int8::unpack_six_bits(chunk, groups);
          }
          for (int g = 0; g < 4; ++g) codes[g][q] = groups[g];
        }
        for (int g = 0; g < 4; ++g)
          dot_group<MR, NP>(xq, a.m0, k + 4 * g, codes[g], dot[g % kChains]);
      }
    } else if constexpr (kBits == 4 || kBits == kTableCodes) {
      const auto step = [&](int k) __attribute__((always_inline)) {
        __m512i low[NP], high[NP];
        for (int q = 0; q < NP; ++q) {
          const uint8_t* at = w.u8_panel(a.p + q) + static_cast<size_t>(k) * 8;
          prefetch_stream(at);
          if constexpr (kBits == kTableCodes) {
            int8::unpack_table_codes(_mm512_load_si512(at), low[q], high[q]);
          } else {
            int8::unpack_nibbles(_mm512_load_si512(at), low[q], high[q]);
          }
        }
        dot_group<MR, NP>(xq, a.m0, k, low, dot[0]);
        dot_group<MR, NP>(xq, a.m0, k + 4, high, dot[kChains - 1]);
      };
      // Unrolled where B is a constant (Q4_0); Q4_K's loop runs faster rolled.
      if constexpr (kUnit) {
#pragma GCC unroll 4
        for (int i = 0; i < B / 8; ++i) step(k0 + 8 * i);
      } else {
        for (int i = 0; i < B / 8; ++i) step(k0 + 8 * i);
      }
    } else {
      // Each chain takes one 4-k group per pass; the chain index must be a constant, or g++
      // keeps the accumulators on the stack (a store-to-load round trip per vpdpbusd).
#pragma GCC unroll 8
      for (int i = 0; i < B / (4 * kChains); ++i) {
        const int k = k0 + 4 * kChains * i;
        for (int c = 0; c < kChains; ++c) {
          __m512i codes[NP];
          for (int q = 0; q < NP; ++q) {
            const uint8_t* at = w.u8_panel(a.p + q) + static_cast<size_t>(k + 4 * c) * 16;
            prefetch_stream(at);
            codes[q] = _mm512_load_si512(at);
          }
          dot_group<MR, NP>(xq, a.m0, k + 4 * c, codes, dot[c]);
        }
      }
    }
    if constexpr (kChains == 2) {
      for (int m = 0; m < MR; ++m) {
        for (int q = 0; q < NP; ++q) dot[0][m][q] = _mm512_add_epi32(dot[0][m][q], dot[1][m][q]);
      }
    }
    // Unit scales come with one sub-block per super-block: its dot is the super-block's isum.
    if constexpr (!kUnit) {
      __m512i scale[NP];
      for (int q = 0; q < NP; ++q) scale[q] = int8::sub_scales(w, a.p + q, b);
      for (int m = 0; m < MR; ++m) {
        for (int q = 0; q < NP; ++q) {
          const __m512i scaled = _mm512_mullo_epi32(dot[0][m][q], scale[q]);
          dot[0][m][q] = (b & (subs - 1)) == 0
                             ? scaled
                             : _mm512_add_epi32(_mm512_load_si512(isum[m][q]), scaled);
          _mm512_store_si512(isum[m][q], dot[0][m][q]);
        }
      }
      if ((b & (subs - 1)) != subs - 1) continue;
    }
    const int s = b >> subs_shift;
    const int8::SuperBlockFactors<NP, kMins, kUnit> factors(w, a.p, s, a.xf->pairs);
    for (int m = 0; m < MR; ++m) {
      for (int q = 0; q < NP; ++q) {
        total[m][q] = _mm512_add_ps(
            total[m][q], int8::super_block_term(dot[0][m][q], factors, q, *a.xf, a.m0 + m, s,
                                                !kUnit && w.code_offset() != 0));
      }
    }
  }
  for (int q = 0; q < NP; ++q) {
    for (int m = 0; m < MR; ++m) int8::store_outputs(a, m, q, total[m][q]);
  }
}

template <bool kMins, int kBits, bool kUnit>
void dispatch(const TileArgs& a) {
  const bool two = a.np == 2;
  switch (a.mr) {
    case 1: {
      // One row (decode) takes its panels one at a time: one weight stream from DRAM rather than
      // two side by side, and its factor streams with it (llama-110m q4_k_m tg128, interleaved:
      // 264-279 -> 297-320 tokens/s; q8_0 unchanged).
      TileArgs one = a;
      one.np = 1;
      for (int q = 0; q < a.np; ++q, ++one.p) tile<1, 1, kMins, kBits, kUnit>(one);
      return;
    }
    case 2:
      return two ? tile<2, 2, kMins, kBits, kUnit>(a) : tile<2, 1, kMins, kBits, kUnit>(a);
    case 3:
      return two ? tile<3, 2, kMins, kBits, kUnit>(a) : tile<3, 1, kMins, kBits, kUnit>(a);
    case 4:
      return two ? tile<4, 2, kMins, kBits, kUnit>(a) : tile<4, 1, kMins, kBits, kUnit>(a);
    case 5:
      return two ? tile<5, 2, kMins, kBits, kUnit>(a) : tile<5, 1, kMins, kBits, kUnit>(a);
    default:
      static_assert(kVnniRows == 6, "one case per row count");
      // 6-bit codes unpack into 4 registers a panel, so 6 rows of 2 panels spill a little,
      // still faster than two passes of 3 rows (Q6_K, M = 6, N = 16384, K = 2048, medians of
      // 3: 1.17 ms against 1.27).
      return two ? tile<6, 2, kMins, kBits, kUnit>(a) : tile<6, 1, kMins, kBits, kUnit>(a);
  }
}

}  // namespace

void gemm_int8_tile_vnni(const TileArgs& a) {
  with_int8_shape(*a.w, [&](auto mins, auto bits) {
    if (!mins.value && a.w->unit_sub_scales()) {
      dispatch<false, bits.value, true>(a);
    } else {
      dispatch<mins.value, bits.value, false>(a);
    }
  });
}

}  // namespace pagedllm::cpu
