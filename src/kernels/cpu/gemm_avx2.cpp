// AVX2 + FMA GEMM tile (compiled with -mavx2 -mfma; called only when the CPU has them). Same
// order as gemm_tile_generic. A panel of 16 outputs is two 8-lane vectors; up to 2 rows at a
// time (one row for two panels) keep both chains' partial sums in the 16 ymm registers.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

namespace {

constexpr int kHalves = PackedMatrix::kPanel / 8;

template <PanelStorage kS>
inline __m256 load_half(const PackedMatrix& w, int panel, int k, int h) {
  const size_t i = static_cast<size_t>(k) * PackedMatrix::kPanel + static_cast<size_t>(h) * 8;
  if constexpr (kS == PanelStorage::kBF16) {
    const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(w.bf16_panel(panel) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
  } else {
    return _mm256_load_ps(w.f32_panel(panel) + i);
  }
}

template <int MR, int NP, PanelStorage kS>
void rows(const TileArgs& a, int m_offset) {
  constexpr int V = NP * kHalves;
  alignas(32) float total[MR][V * 8] = {};
  for (int k0 = 0; k0 < a.K; k0 += kKBlock) {
    const int k1 = std::min(a.K, k0 + kKBlock);
    __m256 part[2][MR][V];  // the block's even and odd k
    for (int e = 0; e < 2; ++e) {
      for (int m = 0; m < MR; ++m) {
        for (int v = 0; v < V; ++v) part[e][m][v] = _mm256_setzero_ps();
      }
    }
    const auto step = [&](int k, __m256(&chain)[MR][V]) __attribute__((always_inline)) {
      __m256 w[V];
      for (int v = 0; v < V; ++v) w[v] = load_half<kS>(*a.w, a.p + v / kHalves, k, v % kHalves);
      for (int m = 0; m < MR; ++m) {
        const __m256 xb = _mm256_set1_ps(a.x[static_cast<size_t>(m_offset + m) * a.ldx + k]);
        for (int v = 0; v < V; ++v) chain[m][v] = _mm256_fmadd_ps(xb, w[v], chain[m][v]);
      }
    };
    int k = k0;
    for (; k + 1 < k1; k += 2) {
      step(k, part[0]);
      step(k + 1, part[1]);
    }
    if (k < k1) step(k, part[0]);
    for (int m = 0; m < MR; ++m) {
      for (int v = 0; v < V; ++v) {
        const __m256 block = _mm256_add_ps(part[0][m][v], part[1][m][v]);
        _mm256_store_ps(&total[m][v * 8], _mm256_add_ps(_mm256_load_ps(&total[m][v * 8]), block));
      }
    }
  }
  for (int m = 0; m < MR; ++m) {
    for (int c = 0; c < V * 8; ++c) {
      const int n = a.p * PackedMatrix::kPanel + c;
      if (n >= a.n_end) break;
      a.y[static_cast<size_t>(m_offset + m) * a.ldy + n] =
          total[m][c] + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

template <PanelStorage kS>
void dispatch(const TileArgs& a) {
  for (int m = 0; m < a.mr; m += 2) {
    const bool pair = m + 1 < a.mr;
    if (a.np == 2) {
      // Two rows of two panels would need 16 accumulators: more than the 16 ymm registers.
      rows<1, 2, kS>(a, m);
      if (pair) rows<1, 2, kS>(a, m + 1);
    } else {
      pair ? rows<2, 1, kS>(a, m) : rows<1, 1, kS>(a, m);
    }
  }
}

}  // namespace

void gemm_tile_avx2(const TileArgs& a) {
  if (a.w->storage() == PanelStorage::kBF16) {
    dispatch<PanelStorage::kBF16>(a);
  } else {
    dispatch<PanelStorage::kF32>(a);
  }
}

}  // namespace pagedllm::cpu
