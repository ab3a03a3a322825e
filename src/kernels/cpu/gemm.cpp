#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/dequant.h"

namespace pagedllm::cpu {

namespace {

float weight_at(const PackedMatrix& w, int p, int k, int j) {
  const size_t i = static_cast<size_t>(k) * PackedMatrix::kPanel + static_cast<size_t>(j);
  switch (w.storage()) {
    case PanelStorage::kBF16:
      return bf16_to_f32(w.bf16_panel(p)[i]);
    case PanelStorage::kInt8: {
      const size_t s =
          static_cast<size_t>(k >> w.quant_shift()) * PackedMatrix::kPanel + static_cast<size_t>(j);
      const float scaled = w.scale_panel(p)[s] * static_cast<float>(w.int8_panel(p)[i]);
      return w.has_mins() ? scaled - w.min_panel(p)[s] : scaled;
    }
    default:
      return w.f32_panel(p)[i];
  }
}

}  // namespace

// The reference path: the exact order of gemm.h, written plainly.
void gemm_tile_generic(const TileArgs& a) {
  for (int m = 0; m < a.mr; ++m) {
    const float* xr = a.x + static_cast<size_t>(m) * a.ldx;
    for (int pp = 0; pp < a.np; ++pp) {
      for (int j = 0; j < PackedMatrix::kPanel; ++j) {
        const int n = (a.p + pp) * PackedMatrix::kPanel + j;
        if (n >= a.n_end) break;
        float total = 0.0f;
        for (int k0 = 0; k0 < a.K; k0 += kKBlock) {
          float partial = 0.0f;
          const int k1 = std::min(a.K, k0 + kKBlock);
          for (int k = k0; k < k1; ++k)
            partial = std::fma(xr[k], weight_at(*a.w, a.p + pp, k, j), partial);
          total += partial;
        }
        a.y[static_cast<size_t>(m) * a.ldy + n] = total + (a.bias ? a.bias[n] : 0.0f);
      }
    }
  }
}

void gemm_packed(Isa isa, const float* x, int M, const PackedMatrix& w, float* y,
                 const float* bias) {
  const auto tile = isa == Isa::kAvx512 ? gemm_tile_avx512
                    : isa == Isa::kAvx2 ? gemm_tile_avx2
                                        : gemm_tile_generic;
  const int panel_pairs = (w.panels() + 1) / 2;
  const int row_tiles = (M + kMaxTileRows - 1) / kMaxTileRows;
  const int K = w.cols(), N = w.rows();
  // Panel pairs outermost so that a thread reuses one weight panel across its row tiles.
#pragma omp parallel for schedule(static) collapse(2) if (static_cast <int64_t>(M) * N * K > 65536)
  for (int pp = 0; pp < panel_pairs; ++pp) {
    for (int rt = 0; rt < row_tiles; ++rt) {
      const int m0 = rt * kMaxTileRows;
      const int p = 2 * pp;
      TileArgs a{x + static_cast<size_t>(m0) * K,
                 K,
                 std::min(kMaxTileRows, M - m0),
                 K,
                 &w,
                 p,
                 std::min(2, w.panels() - p),
                 y + static_cast<size_t>(m0) * N,
                 N,
                 N,
                 bias};
      tile(a);
    }
  }
}

void gemm_packed(const float* x, int M, const PackedMatrix& w, float* y, const float* bias) {
  gemm_packed(active_isa(), x, M, w, y, bias);
}

}  // namespace pagedllm::cpu
