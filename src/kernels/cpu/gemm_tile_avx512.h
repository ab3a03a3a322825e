// The AVX-512 float GEMM tile's frame, shared by the files compiled for AVX-512 (include it
// only from those): blocks of steps summed in kChains chains (one, or the block's even and odd
// steps), block totals added in order, bias added at the end (gemm.h's orders). A Steps<MR, NP>
// type supplies the step: `Steps<MR, NP>(a).step(i, chain)` adds step i of rows [0, MR) x panels
// [p, p + NP) into chain; count() steps in all, kBlock per block.
#pragma once

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/stream_prefetch.h"

namespace pagedllm::cpu::avx512 {

// bf16 steps' state: one step is one k pair of panels [p, p + NP) and activation rows
// [m0, m0 + MR), their base pointers taken once per tile.
template <int MR, int NP>
struct Bf16PairBase {
  static constexpr int kBlock = kKBlock / 2;
  static constexpr int kChains = 2;
  const uint16_t* panel[NP];
  const uint32_t* x[MR];
  int pairs;
  explicit Bf16PairBase(const TileArgs& a) : pairs(a.xb->pairs) {
    for (int q = 0; q < NP; ++q) panel[q] = a.w->bf16_panel(a.p + q);
    for (int m = 0; m < MR; ++m) x[m] = a.xb->row(a.m0 + m);
  }
  int count() const { return pairs; }
  // Pair i's 64-byte line of panel q, prefetched ahead for decode, which streams the panel once
  // from DRAM. A batch's row tiles reread the group from L2, where the two prefetches per line
  // only took load slots from the broadcasts (native Zen 5, alternating: llama-1b bf16 pp512
  // 311-368 -> 346-377 tok/s, BM_Gemm bf16 M=512 about 3 % faster; batched 32 x (128 + 128)
  // and the M=32 shapes unchanged within the host's noise).
  __m512i line(int q, int i) const {
    const uint16_t* at = panel[q] + static_cast<size_t>(i) * 2 * PackedMatrix::kPanel;
    if constexpr (MR <= 2) prefetch_stream(at);
    return _mm512_load_si512(at);
  }
};

// Columns of panel p + q that exist (below n_end).
inline __mmask16 column_mask(const TileArgs& a, int q) {
  const int valid = std::clamp(a.n_end - (a.p + q) * PackedMatrix::kPanel, 0, PackedMatrix::kPanel);
  return static_cast<__mmask16>((1u << valid) - 1u);
}

template <int MR, int NP, template <int, int> class Steps>
void tile(const TileArgs& a) {
  using S = Steps<MR, NP>;
  constexpr int C = S::kChains;
  static_assert(C == 1 || C == 2, "the block tail below handles one or two chains");
  const S steps(a);
  // Partial sums live in registers (C x MR x NP <= 24); block totals in memory.
  alignas(64) float total[MR][NP][16] = {};
  if (a.resume) {
    for (int q = 0; q < NP; ++q) {
      const __mmask16 mask = column_mask(a, q);
      for (int m = 0; m < MR; ++m) {
        _mm512_store_ps(total[m][q],
                        _mm512_maskz_loadu_ps(mask, a.y + static_cast<size_t>(m) * a.ldy +
                                                        (a.p + q) * PackedMatrix::kPanel));
      }
    }
  }
  // k ranges are whole blocks, but for the last.
  const int end = a.k_end == 0 || a.k_end >= a.K ? steps.count() : a.k_end / kKBlock * S::kBlock;
  for (int i0 = a.k_begin / kKBlock * S::kBlock; i0 < end; i0 += S::kBlock) {
    const int i1 = std::min(end, i0 + S::kBlock);
    __m512 part[C][MR][NP];  // chain e holds the block's steps i with (i - i0) % C == e
    for (int e = 0; e < C; ++e) {
      for (int m = 0; m < MR; ++m) {
        for (int q = 0; q < NP; ++q) part[e][m][q] = _mm512_setzero_ps();
      }
    }
    int i = i0;
    for (; i + C - 1 < i1; i += C) {
      for (int e = 0; e < C; ++e) steps.step(i + e, part[e]);
    }
    if (i < i1) steps.step(i, part[0]);  // two chains, odd count: the last even step
    for (int m = 0; m < MR; ++m) {
      for (int q = 0; q < NP; ++q) {
        const __m512 block =
            C == 2 ? _mm512_add_ps(part[0][m][q], part[C - 1][m][q]) : part[0][m][q];
        _mm512_store_ps(total[m][q], _mm512_add_ps(_mm512_load_ps(total[m][q]), block));
      }
    }
  }
  for (int q = 0; q < NP; ++q) {
    const int n0 = (a.p + q) * PackedMatrix::kPanel;
    const __mmask16 mask = column_mask(a, q);
    // Without bias add +0.0, as the reference's `total + 0.0f` does.
    const __m512 b = a.bias ? _mm512_maskz_loadu_ps(mask, a.bias + n0) : _mm512_setzero_ps();
    for (int m = 0; m < MR; ++m) {
      const __m512 t = _mm512_load_ps(total[m][q]);
      _mm512_mask_storeu_ps(a.y + static_cast<size_t>(m) * a.ldy + n0, mask,
                            a.finish ? _mm512_add_ps(t, b) : t);
    }
  }
}

// Calls tile<MR, np> for a.np in [1, kMaxPanels].
template <template <int, int> class Steps, int kMaxPanels, int MR>
void tile_with_rows(const TileArgs& a) {
  static_assert(kMaxPanels >= 2 && kMaxPanels <= kMaxTilePanels);
  if constexpr (kMaxPanels >= 4) {
    if (a.np == 4) return tile<MR, 4, Steps>(a);
  }
  if constexpr (kMaxPanels >= 3) {
    if (a.np == 3) return tile<MR, 3, Steps>(a);
  }
  return a.np == 2 ? tile<MR, 2, Steps>(a) : tile<MR, 1, Steps>(a);
}

// Calls tile<mr, np> for a.mr in [1, 6] (more counts as 6) and a.np in [1, kMaxPanels]; with
// kMaxRows kF32BatchRows, a.mr of 7 or 8 too, for at most kF32BatchPanels panels.
template <template <int, int> class Steps, int kMaxPanels = 2, int kMaxRows = 6>
void dispatch(const TileArgs& a) {
  static_assert(kMaxRows == 6 || kMaxRows == kF32BatchRows);
  static_assert(kF32BatchRows == 8 && kF32BatchRows * kF32BatchPanels <= 24, "7 and 8 rows below");
  switch (a.mr) {
    case 1:
      return tile_with_rows<Steps, kMaxPanels, 1>(a);
    case 2:
      return tile_with_rows<Steps, kMaxPanels, 2>(a);
    case 3:
      return tile_with_rows<Steps, kMaxPanels, 3>(a);
    case 4:
      return tile_with_rows<Steps, kMaxPanels, 4>(a);
    case 5:
      return tile_with_rows<Steps, kMaxPanels, 5>(a);
    default:
      break;
  }
  if constexpr (kMaxRows == kF32BatchRows) {
    if (a.mr == 7) return tile_with_rows<Steps, kF32BatchPanels, 7>(a);
    if (a.mr >= 8) return tile_with_rows<Steps, kF32BatchPanels, 8>(a);
  }
  return tile_with_rows<Steps, kMaxPanels, 6>(a);
}

}  // namespace pagedllm::cpu::avx512
