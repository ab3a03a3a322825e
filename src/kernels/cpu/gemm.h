// GEMM against packed weights: y[M, N] = x[M, K] . W^T (+ bias), f32 activations, with runtime
// ISA dispatch (cpu_features.h).
//
// f32 weights (and f16, widened at packing). Every output sums its K products with FMA in blocks
// of kKBlock, each block one chain sequential in k, and the block sums are added in order. (One
// chain per output lets the AVX-512 tile hold 6 rows x 64 outputs in registers; with two chains
// per block, as bf16 has, it held 6 x 32 and ran at 156 rather than 176 GFLOP/s per core.)
//
// bf16 weights. As llama.cpp does, activations are rounded to bf16 (bf16_activations.h) and
// multiplied in k pairs, in vdpbf16ps's order: a pair adds its odd k's product, then its even
// k's, each add rounded once (a product of two bf16 is exact in f32, so an FMA is that add).
// Pairs are summed in blocks of kKBlock k, each block in two chains (its even and odd pairs, each
// sequential) added at its end, which doubles the independent chains a tile has for few rows. The
// whole product runs with denormal inputs and results flushed to zero, as vdpbf16ps runs: the paths
// without it set MXCSR's FTZ and DAZ for their tile.
//
// Block-quantized weights (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). As llama.cpp does, each activation
// row is quantized per weight super-block (quantized_activations.h: 32 values for Q8_0 and Q4_0,
// 256 for the k-quants, whose sub-block factors are small integers), and each super-block s
// contributes, with x_scale its activation scale, d and dmin its f16 factors and sc_j, mn_j its
// sub-blocks' integer factors,
//   isum = sum_j sc_j * (dot_j - offset * xsum_j),   imin = sum_j mn_j * xsum_j
//   t = d * (x_scale * float(isum)) - dmin * (x_scale * float(imin))
// where dot_j is the exact integer dot product of the stored u8 codes and the activation codes
// over sub-block j and xsum_j is the sum of those activation codes; the t are added in k order.
// isum and imin are exact in int32 (|isum| < 2^28 at 256 k), so a path may form them in any order:
// the float work is once per super-block, not once per 16 or 32 k.
//
// No path changes these orders with M, the tile shape or the ISA, so results are bit-identical
// across batch sizes and between the generic, AVX2 and AVX-512 paths.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bf16_activations.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/flush_denormals.h"
#include "kernels/cpu/packed_matrix.h"
#include "kernels/cpu/quantized_activations.h"

namespace pagedllm::cpu {

constexpr int kKBlock = 256;
constexpr int kMaxTileRows = 4;
constexpr int kMaxTilePanels = 4;
// The AVX-512 f32 tile for batches (gemm.cpp tile_shape): 8 rows x 3 panels, 24 accumulators.
constexpr int kF32BatchRows = 8, kF32BatchPanels = 3;
// The AVX2 tile: up to 6 rows of one panel per pass (gemm_avx2.cpp), 2 panels per tile.
constexpr int kAvx2Rows = 6;
// The 256-bit int8 tiles (AVX2, AVX-VNNI): up to 8 rows of a half panel per pass (gemm_int8_ymm.h).
constexpr int kAvx2Int8Rows = 8;
// The VNNI int8 tile: up to 6 rows per pass (gemm_int8_vnni.cpp), so that a verify step of
// 1 + 4 or 1 + 5 tokens reads each weight panel in one pass, not as row tiles of 3 and 2.
constexpr int kVnniRows = 6;
// The AVX512-BF16 tile likewise (gemm_bf16_dot.cpp; avx512::dispatch takes up to 6 rows).
constexpr int kBf16DotRows = 6;

// Where the process's matmul backend says so (gemm_onednn.h), a bf16 product of at least
// kOneDnnMinRows rows goes to oneDNN instead, in oneDNN's order of additions.
void gemm_packed(const float* x, int M, const PackedMatrix& w, float* y,
                 const float* bias = nullptr);
// The same on an explicit native path, never oneDNN (tests compare paths).
void gemm_packed(Isa isa, const float* x, int M, const PackedMatrix& w, float* y,
                 const float* bias);

// Per activation row and weight super-block, the activation factors of the int8 terms (see
// above): x_scale, code_offset * xsum over the super-block, and the sub-blocks' xsum_j as int16
// pairs (xsum_2i in the low half, xsum_2i+1 in the high half, 0 past the last sub-block) for the
// kernels' pairwise products with the weights' sub-block factors. Computed once per product for the
// AVX2, VNNI and AMX tiles, rather than in every panel group.
struct SubBlockRowFactors {
  int super_blocks = 0, pairs = 0;  // pairs per super-block
  // [M][super_blocks]: code_offset * the super-block's xsum, the offset term that the VNNI and
  // AMX tiles of unit-scale weights (Q8_0, Q4_0) subtract, premultiplied: one broadcast load per
  // row and block in Q4_0's epilogue (the AVX2 tile takes offset_halves instead).
  std::vector<int32_t> offset_xsum;
  // [M][super_blocks], the AVX2 tile's 4-bit unit-scale weights (Q4_0) only: minus the offset
  // term split by lane half, code_offset * the xsum over k = 0, 1 mod 4 in the low int16 and over
  // k = 2, 3 mod 4 in the high, where vpmaddubsw leaves those k's products. The tile starts its
  // 16-bit sums there, so the term costs no subtraction per row and block.
  std::vector<int32_t> offset_halves;
  std::vector<float> x_scale;       // [M][super_blocks]
  std::vector<int32_t> xsum_pairs;  // [M][super_blocks][pairs]
  void compute(const PackedMatrix& w, const QuantizedActivations& xq, int M,
               bool offset_halves_too = false);
  size_t at(int row, int s) const {
    return static_cast<size_t>(row) * static_cast<size_t>(super_blocks) + static_cast<size_t>(s);
  }
  const int32_t* pairs_at(int row, int s) const {
    return xsum_pairs.data() + at(row, s) * static_cast<size_t>(pairs);
  }
};

// One tile: rows [0, mr) of x (row stride ldx), which are rows [m0, m0 + mr) of xq for int8
// weights and of xb for bf16 weights, times panels [p, p + np) (np <= kMaxTilePanels) into y (row
// stride ldy); columns at or past n_end are not written. Each path implements this.
struct TileArgs {
  const float* x;
  int ldx, mr, K;
  const PackedMatrix* w;
  int p, np;
  float* y;
  int ldy, n_end;
  const float* bias;
  const QuantizedActivations* xq;  // int8 weights only
  int m0;
  const Bf16Activations* xb;     // bf16 weights only
  const SubBlockRowFactors* xf;  // int8 weights, the AVX2, VNNI and AMX tiles
  // The AVX2 int8 tile only: this tile's activation codes, four k (one 32-bit quad) of each of
  // its mr rows in turn, [K / 4][mr], so that a k step reads every row's quad at a constant
  // offset from one pointer (interleave_quads).
  const int32_t* quads = nullptr;
  // The AVX-512 f32 tile only: k in [k_begin, k_end) (multiples of kKBlock; k_end 0 means K).
  // resume: y holds the block totals of the k before k_begin; finish: add the bias and the last
  // blocks, else leave the running totals in y for the next range. Totals round-trip exactly.
  int k_begin = 0, k_end = 0;
  bool resume = false, finish = true;
  // The AVX-512 f32 tile, over all of K: the first panel of the np-panel group this thread runs
  // next (-1: none), whose lines [next_line, next_line + K) in its first pass's order (line i:
  // k = i / np of panel i % np) the tile fetches into cache, one per k step. The AVX2 batch
  // tiles read one line per panel and step, so the tile given next_line 0 fetches all of it.
  int next_p = -1, next_line = 0;
};
void gemm_tile_generic(const TileArgs& a);
// The first row of row tile t when M rows split evenly over `tiles` tiles (7 rows in 2: 4 3).
inline int row_tile_begin(int M, int tiles, int t) {
  return t * (M / tiles) + std::min(t, M % tiles);
}
// Lays out the quads of each row tile of xq (its M rows split by row_tile_begin) as
// TileArgs::quads wants them, tile t's block at row_tile_begin(M, tiles, t) * K / 4 of out.
void interleave_quads(const QuantizedActivations& xq, int tiles, std::vector<int32_t>& out);

void gemm_tile_avx2(const TileArgs& a);
void gemm_tile_avx512(const TileArgs& a);
// bf16 weights with AVX512-BF16 dot products.
void gemm_bf16_tile_dot(const TileArgs& a);
// bf16 weights with AVX-512 FMAs on the widened activations (Bf16Activations::widened, which
// gemm_packed fills for this tile): batches, where the CPU lacks AVX512-BF16 or issues its dot
// products slower (bf16_batch_tile.h).
void gemm_bf16_tile_fma(const TileArgs& a);
// int8 weights: AVX2 (exact 16-bit products) and AVX-512 VNNI.
void gemm_int8_tile_avx2(const TileArgs& a);
void gemm_int8_tile_avxvnni(const TileArgs& a);  // the same tile with AVX-VNNI's vpdpbusd
void gemm_int8_tile_vnni(const TileArgs& a);
// int8 weights, AMX-INT8 (gemm_int8_amx.h): up to kAmxTileRows rows per tile, for products of at
// least kAmxMinRows rows (BM_GemmQuantized, 2 threads, Q8_0 N=16384 K=2048: at 4 rows 306-353
// GOP/s against VNNI's 382-388, at 8 rows 623-630 against 386).
void gemm_int8_tile_amx(const TileArgs& a);
constexpr int kAmxTileRows = 16, kAmxMinRows = 8;
// Releases this thread's tiles. gemm_packed calls it on each thread that ran AMX tiles before
// it returns: the tiles keep their configuration from one tile to the next within a call, and
// other AMX code (oneDNN) must find them released.
void amx_release_tiles();

// The int8 shape of 4-bit indices into kIq4Codes (PackedMatrix::table_codes): stored as 4-bit
// codes, multiplied as 8-bit ones.
inline constexpr int kTableCodes = 48;

// Calls f(mins, bits) with the packed matrix's int8 shape as compile-time constants
// (std::bool_constant, std::integral_constant<int, 2 | 4 | 5 | 6 | 8 | kTableCodes>), so each ISA
// file instantiates its kernel for every shape from one switch.
template <typename F>
void with_int8_shape(const PackedMatrix& w, F&& f) {
  const auto by_bits = [&](auto mins) {
    switch (w.code_bits()) {
      case 2:
        return f(mins, std::integral_constant<int, 2>{});
      case 4:
        if (w.table_codes()) return f(mins, std::integral_constant<int, kTableCodes>{});
        return f(mins, std::integral_constant<int, 4>{});
      case 5:
        return f(mins, std::integral_constant<int, 5>{});
      case 6:
        return f(mins, std::integral_constant<int, 6>{});
      default:
        return f(mins, std::integral_constant<int, 8>{});
    }
  };
  if (w.has_mins()) {
    by_bits(std::true_type{});
  } else {
    by_bits(std::false_type{});
  }
}

}  // namespace pagedllm::cpu
