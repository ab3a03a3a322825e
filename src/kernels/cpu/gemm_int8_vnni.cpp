// AVX-512 VNNI tile for block-quantized weights (compiled with -mavx512vnni; called only when
// the CPU has it). One vpdpbusd multiplies a panel's u8 codes for 4 consecutive k of 16 outputs
// by 4 broadcast activation codes: 64 exact products per instruction, against 16 for an f32
// FMA. The float epilogue per sub-block follows gemm.h's order exactly.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

namespace {
// Bytes ahead of each panel stream to prefetch: the hardware prefetcher alone leaves decode
// (one pass over the weights) below the DRAM bandwidth; 2 KB per stream measured best.
constexpr int kPrefetchBytes = 2048;

// One vpdpbusd per row and panel for the 4 k from k (line: the panel's codes for them).
template <int MR, int NP>
inline void dot_group(const QuantizedActivations& xq, int m0, int k, const __m512i (&line)[NP],
                      __m512i (&dot)[MR][NP]) {
  for (int m = 0; m < MR; ++m) {
    const __m512i x = _mm512_set1_epi32(xq.quad(m0 + m, k));
    for (int q = 0; q < NP; ++q) dot[m][q] = _mm512_dpbusd_epi32(dot[m][q], line[q], x);
  }
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

template <int MR, int NP, bool kMins, int kBits>
void tile(const TileArgs& a) {
  const PackedMatrix& w = *a.w;
  const QuantizedActivations& xq = *a.xq;
  const int B = w.quant_block();
  const int sub_blocks = a.K >> w.quant_shift();
  const int super_step = w.super_shift() - w.quant_shift();
  __m512 total[MR][NP];
  for (int m = 0; m < MR; ++m) {
    for (int q = 0; q < NP; ++q) total[m][q] = _mm512_setzero_ps();
  }
  for (int b = 0; b < sub_blocks; ++b) {
    const int k0 = b * B;
    // Few rows leave vpdpbusd's latency exposed: alternate k-groups between two accumulator
    // sets then (integer sums, so the result is the same).
    constexpr int kChains = MR <= 2 ? 2 : 1;
    __m512i dot[kChains][MR][NP];
    for (int c = 0; c < kChains; ++c) {
      for (int m = 0; m < MR; ++m) {
        for (int q = 0; q < NP; ++q) dot[c][m][q] = _mm512_setzero_si512();
      }
    }
    if constexpr (kBits == 6) {
      const __m512i low_nibbles = _mm512_set1_epi8(0x0F), top_bits = _mm512_set1_epi8(0x30);
      for (int k = k0; k < k0 + B; k += 16) {
        __m512i codes[4][NP];
        for (int q = 0; q < NP; ++q) {
          const uint8_t* chunk = w.u8_panel(a.p + q) + static_cast<size_t>(k) * 12;
          for (int l = 0; l < 3; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(chunk + kPrefetchBytes + 64 * l),
                         _MM_HINT_T0);
          const __m512i n0 = _mm512_load_si512(chunk), n1 = _mm512_load_si512(chunk + 64);
          const __m512i h = _mm512_load_si512(chunk + 128);
          // Group g's top bits sit at bit 2g of h: move them to bits 4-5 and add the nibble,
          // nibble | (top & 0x30) in one ternary-logic op.
          const auto join = [&](__m512i nibble, __m512i top) {
            return _mm512_ternarylogic_epi32(_mm512_and_si512(nibble, low_nibbles), top, top_bits,
                                             0xF8);
          };
          codes[0][q] = join(n0, _mm512_slli_epi16(h, 4));
          codes[1][q] = join(_mm512_srli_epi16(n0, 4), _mm512_slli_epi16(h, 2));
          codes[2][q] = join(n1, h);
          codes[3][q] = join(_mm512_srli_epi16(n1, 4), _mm512_srli_epi16(h, 2));
        }
        for (int g = 0; g < 4; ++g)
          dot_group<MR, NP>(xq, a.m0, k + 4 * g, codes[g], dot[g % kChains]);
      }
    } else if constexpr (kBits == 4) {
      const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
      for (int k = k0; k < k0 + B; k += 8) {
        __m512i low[NP], high[NP];
        for (int q = 0; q < NP; ++q) {
          const uint8_t* at = w.u8_panel(a.p + q) + static_cast<size_t>(k) * 8;
          _mm_prefetch(reinterpret_cast<const char*>(at + kPrefetchBytes), _MM_HINT_T0);
          const __m512i line = _mm512_load_si512(at);
          low[q] = _mm512_and_si512(line, low_nibbles);
          high[q] = _mm512_and_si512(_mm512_srli_epi16(line, 4), low_nibbles);
        }
        dot_group<MR, NP>(xq, a.m0, k, low, dot[0]);
        dot_group<MR, NP>(xq, a.m0, k + 4, high, dot[kChains - 1]);
      }
    } else {
      // Each chain takes one 4-k group per pass; the chain index must be a constant, or g++
      // keeps the accumulators on the stack (a store-to-load round trip per vpdpbusd).
      for (int k = k0; k < k0 + B; k += 4 * kChains) {
        for (int c = 0; c < kChains; ++c) {
          __m512i codes[NP];
          for (int q = 0; q < NP; ++q) {
            const uint8_t* at = w.u8_panel(a.p + q) + static_cast<size_t>(k + 4 * c) * 16;
            _mm_prefetch(reinterpret_cast<const char*>(at + kPrefetchBytes), _MM_HINT_T0);
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
    __m512 scale[NP], min[NP];
    for (int q = 0; q < NP; ++q) {
      scale[q] = factored(w.super_scale_panel(a.p + q), w.sub_scale_panel(a.p + q), b, super_step);
      if constexpr (kMins)
        min[q] = factored(w.super_min_panel(a.p + q), w.sub_min_panel(a.p + q), b, super_step);
    }
    for (int m = 0; m < MR; ++m) {
      const int32_t xsum = xq.sum(a.m0 + m, k0, B);
      const float x_scale = xq.scale(a.m0 + m, k0);
      const __m512i correction = _mm512_set1_epi32(w.code_offset() * xsum);
      const __m512 xs = _mm512_set1_ps(x_scale);
      const __m512 min_factor = _mm512_set1_ps(x_scale * static_cast<float>(xsum));
      for (int q = 0; q < NP; ++q) {
        // The zero-masked form: the unmasked one trips g++ 12's -Wmaybe-uninitialized.
        const __m512 d =
            _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_sub_epi32(dot[0][m][q], correction));
        __m512 t = _mm512_mul_ps(scale[q], _mm512_mul_ps(xs, d));
        if constexpr (kMins) t = _mm512_sub_ps(t, _mm512_mul_ps(min[q], min_factor));
        total[m][q] = _mm512_add_ps(total[m][q], t);
      }
    }
  }
  for (int q = 0; q < NP; ++q) {
    const int n0 = (a.p + q) * PackedMatrix::kPanel;
    const int valid = std::clamp(a.n_end - n0, 0, PackedMatrix::kPanel);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 bias = a.bias ? _mm512_maskz_loadu_ps(mask, a.bias + n0) : _mm512_setzero_ps();
    for (int m = 0; m < MR; ++m) {
      _mm512_mask_storeu_ps(a.y + static_cast<size_t>(m) * a.ldy + n0, mask,
                            _mm512_add_ps(total[m][q], bias));
    }
  }
}

template <bool kMins, int kBits>
void dispatch(const TileArgs& a) {
  const bool two = a.np == 2;
  switch (a.mr) {
    case 1:
      return two ? tile<1, 2, kMins, kBits>(a) : tile<1, 1, kMins, kBits>(a);
    case 2:
      return two ? tile<2, 2, kMins, kBits>(a) : tile<2, 1, kMins, kBits>(a);
    case 3:
      return two ? tile<3, 2, kMins, kBits>(a) : tile<3, 1, kMins, kBits>(a);
    default:
      return two ? tile<4, 2, kMins, kBits>(a) : tile<4, 1, kMins, kBits>(a);
  }
}

}  // namespace

void gemm_int8_tile_vnni(const TileArgs& a) {
  with_int8_shape(*a.w, [&](auto mins, auto bits) { dispatch<mins.value, bits.value>(a); });
}

}  // namespace pagedllm::cpu
