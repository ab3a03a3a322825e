// GEMM against packed weights: y[M, N] = x[M, K] . W^T (+ bias), f32 activations, f32 or bf16
// weights, with runtime ISA dispatch (cpu_features.h).
//
// Reduction order (what batch invariance rests on): every output sums its K products with FMA,
// sequentially in k, in blocks of kKBlock whose partial sums are added in order. No path changes
// this order with M, the tile shape or the ISA, so results are bit-identical across batch sizes
// and between the generic, AVX2 and AVX-512 paths.
#pragma once

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/packed_matrix.h"

namespace pagedllm::cpu {

constexpr int kKBlock = 256;
constexpr int kMaxTileRows = 4;

void gemm_packed(const float* x, int M, const PackedMatrix& w, float* y,
                 const float* bias = nullptr);
// The same on an explicit path (tests compare paths).
void gemm_packed(Isa isa, const float* x, int M, const PackedMatrix& w, float* y,
                 const float* bias);

// What a tile kernel specializes on: the storage, and for int8 whether there are mins.
enum class PanelKind { kF32, kBF16, kInt8, kInt8Min };
inline PanelKind panel_kind(const PackedMatrix& w) {
  switch (w.storage()) {
    case PanelStorage::kBF16:
      return PanelKind::kBF16;
    case PanelStorage::kInt8:
      return w.has_mins() ? PanelKind::kInt8Min : PanelKind::kInt8;
    default:
      return PanelKind::kF32;
  }
}

// One tile: rows [0, mr) of x (row stride ldx) times panels [p, p + np) (np <= 2) into y (row
// stride ldy); columns at or past n_end are not written. Each path implements this.
struct TileArgs {
  const float* x;
  int ldx, mr, K;
  const PackedMatrix* w;
  int p, np;
  float* y;
  int ldy, n_end;
  const float* bias;
};
void gemm_tile_generic(const TileArgs& a);
void gemm_tile_avx2(const TileArgs& a);
void gemm_tile_avx512(const TileArgs& a);

}  // namespace pagedllm::cpu
