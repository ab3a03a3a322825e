// AVX-512 GEMM tile (compiled with -mavx512f -mavx512bw -mavx512vl -mfma; called only when the
// CPU has them). Same order as gemm_tile_generic: one FMA per k into a per-block partial.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

namespace {

template <PanelStorage kS>
inline __m512 load_panel_row(const PackedMatrix& w, int panel, int k) {
  const size_t i = static_cast<size_t>(k) * PackedMatrix::kPanel;
  if constexpr (kS == PanelStorage::kBF16) {
    const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(w.bf16_panel(panel) + i));
    // The zero-masked forms: the unmasked ones trip g++ 12's -Wmaybe-uninitialized.
    const __m512i widened = _mm512_maskz_cvtepu16_epi32(0xFFFF, h);
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, widened, 16));
  } else {
    return _mm512_load_ps(w.f32_panel(panel) + i);
  }
}

// Bytes ahead of each panel stream to prefetch: the hardware prefetcher alone leaves decode
// (one pass over the weights) below the DRAM bandwidth.
constexpr int kPrefetchBytes = 2048;

template <PanelStorage kS>
inline void prefetch_panel_row(const PackedMatrix& w, int panel, int k) {
  const size_t i = static_cast<size_t>(k) * PackedMatrix::kPanel;
  if constexpr (kS == PanelStorage::kBF16) {
    if (k % 2 == 0) {  // a 64-byte line holds two k
      _mm_prefetch(reinterpret_cast<const char*>(w.bf16_panel(panel) + i) + kPrefetchBytes,
                   _MM_HINT_T0);
    }
  } else {
    _mm_prefetch(reinterpret_cast<const char*>(w.f32_panel(panel) + i) + kPrefetchBytes,
                 _MM_HINT_T0);
  }
}

template <int MR, int NP, PanelStorage kS>
void tile(const TileArgs& a) {
  // Partial sums live in registers (2 chains x MR * NP <= 16); block totals in memory. (8-row tiles
  // measured slower here: 620 vs 720 tok/s on the batched benchmark.)
  alignas(64) float total[MR][NP][16] = {};
  for (int k0 = 0; k0 < a.K; k0 += kKBlock) {
    const int k1 = std::min(a.K, k0 + kKBlock);
    __m512 part[2][MR][NP];  // the block's even and odd k
    for (int e = 0; e < 2; ++e) {
      for (int m = 0; m < MR; ++m) {
        for (int q = 0; q < NP; ++q) part[e][m][q] = _mm512_setzero_ps();
      }
    }
    const auto step = [&](int k, __m512(&chain)[MR][NP]) __attribute__((always_inline)) {
      __m512 w[NP];
      for (int q = 0; q < NP; ++q) {
        prefetch_panel_row<kS>(*a.w, a.p + q, k);
        w[q] = load_panel_row<kS>(*a.w, a.p + q, k);
      }
      for (int m = 0; m < MR; ++m) {
        const __m512 xb = _mm512_set1_ps(a.x[static_cast<size_t>(m) * a.ldx + k]);
        for (int q = 0; q < NP; ++q) chain[m][q] = _mm512_fmadd_ps(xb, w[q], chain[m][q]);
      }
    };
    int k = k0;
    for (; k + 1 < k1; k += 2) {
      step(k, part[0]);
      step(k + 1, part[1]);
    }
    if (k < k1) step(k, part[0]);
    for (int m = 0; m < MR; ++m) {
      for (int q = 0; q < NP; ++q) {
        const __m512 block = _mm512_add_ps(part[0][m][q], part[1][m][q]);
        _mm512_store_ps(total[m][q], _mm512_add_ps(_mm512_load_ps(total[m][q]), block));
      }
    }
  }
  for (int q = 0; q < NP; ++q) {
    const int n0 = (a.p + q) * PackedMatrix::kPanel;
    const int valid = std::clamp(a.n_end - n0, 0, PackedMatrix::kPanel);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    // Without bias add +0.0, as the reference's `total + 0.0f` does.
    const __m512 b = a.bias ? _mm512_maskz_loadu_ps(mask, a.bias + n0) : _mm512_setzero_ps();
    for (int m = 0; m < MR; ++m) {
      const __m512 out = _mm512_add_ps(_mm512_load_ps(total[m][q]), b);
      _mm512_mask_storeu_ps(a.y + static_cast<size_t>(m) * a.ldy + n0, mask, out);
    }
  }
}

template <PanelStorage kS>
void dispatch(const TileArgs& a) {
  const bool two = a.np == 2;
  switch (a.mr) {
    case 1:
      return two ? tile<1, 2, kS>(a) : tile<1, 1, kS>(a);
    case 2:
      return two ? tile<2, 2, kS>(a) : tile<2, 1, kS>(a);
    case 3:
      return two ? tile<3, 2, kS>(a) : tile<3, 1, kS>(a);
    default:
      return two ? tile<4, 2, kS>(a) : tile<4, 1, kS>(a);
  }
}

}  // namespace

void gemm_tile_avx512(const TileArgs& a) {
  if (a.w->storage() == PanelStorage::kBF16) {
    dispatch<PanelStorage::kBF16>(a);
  } else {
    dispatch<PanelStorage::kF32>(a);
  }
}

}  // namespace pagedllm::cpu
