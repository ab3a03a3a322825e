#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include <omp.h>

#include "format/dequant.h"
#include "kernels/cpu/bf16_batch_tile.h"
#include "kernels/cpu/gemm_onednn.h"
#include "kernels/cpu/work_shares.h"

namespace pagedllm::cpu {

namespace {

// A denormal result as flush-to-zero gives it.
float flushed(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}

// Output j of panel p for activation row `row`, in the order gemm.h gives for bf16 weights.
float bf16_output_generic(const PackedMatrix& w, int p, int j, const Bf16Activations& xb, int row) {
  const uint16_t* panel = w.bf16_panel(p);
  const uint32_t* x = xb.row(row);
  const auto at = [&](int pair, int half) {
    return bf16_to_f32(panel[static_cast<size_t>(pair) * 2 * PackedMatrix::kPanel +
                             static_cast<size_t>(j) * 2 + static_cast<size_t>(half)]);
  };
  const auto x_at = [&](int pair, int half) {
    return bf16_to_f32(static_cast<uint16_t>(x[pair] >> (16 * half)));
  };
  constexpr int kBlockPairs = kKBlock / 2;
  float total = 0.0f;
  for (int i0 = 0; i0 < xb.pairs; i0 += kBlockPairs) {
    float chain[2] = {0.0f, 0.0f};
    for (int i = i0; i < std::min(xb.pairs, i0 + kBlockPairs); ++i) {
      float& c = chain[(i - i0) % 2];
      c = flushed(std::fma(x_at(i, 1), at(i, 1), c));
      c = flushed(std::fma(x_at(i, 0), at(i, 0), c));
    }
    total = flushed(total + flushed(chain[0] + chain[1]));
  }
  return total;
}

// Calls y_mn = f(row m of the tile, panel p, column j, output n) for each output of the tile.
template <typename F>
void for_each_output(const TileArgs& a, F&& f) {
  for (int m = 0; m < a.mr; ++m) {
    for (int pp = 0; pp < a.np; ++pp) {
      for (int j = 0; j < PackedMatrix::kPanel; ++j) {
        const int n = (a.p + pp) * PackedMatrix::kPanel + j;
        if (n >= a.n_end) break;
        a.y[static_cast<size_t>(m) * a.ldy + n] = f(m, a.p + pp, j, n);
      }
    }
  }
}

void bf16_tile_generic(const TileArgs& a) {
  for_each_output(a, [&](int m, int p, int j, int n) {
    const float total = bf16_output_generic(*a.w, p, j, *a.xb, a.m0 + m);
    return flushed(total + (a.bias ? flushed(a.bias[n]) : 0.0f));
  });
}

void float_tile_generic(const TileArgs& a) {
  for (int m = 0; m < a.mr; ++m) {
    const float* xr = a.x + static_cast<size_t>(m) * a.ldx;
    for (int pp = 0; pp < a.np; ++pp) {
      for (int j = 0; j < PackedMatrix::kPanel; ++j) {
        const int n = (a.p + pp) * PackedMatrix::kPanel + j;
        if (n >= a.n_end) break;
        float total = 0.0f;
        for (int k0 = 0; k0 < a.K; k0 += kKBlock) {
          float block = 0.0f;
          const int k1 = std::min(a.K, k0 + kKBlock);
          for (int k = k0; k < k1; ++k) {
            const size_t i = static_cast<size_t>(k) * PackedMatrix::kPanel + static_cast<size_t>(j);
            block = std::fma(xr[k], a.w->f32_panel(a.p + pp)[i], block);
          }
          total += block;
        }
        a.y[static_cast<size_t>(m) * a.ldy + n] = total + (a.bias ? a.bias[n] : 0.0f);
      }
    }
  }
}

// Output j of panel p for activation row `row`, in the order gemm.h gives for int8 weights.
float int8_output_generic(const PackedMatrix& w, int p, int j, const QuantizedActivations& xq,
                          int row) {
  const int B = w.quant_block(), subs = w.sub_blocks_per_super();
  const int8_t* x = xq.row(row);
  float total = 0.0f;
  for (int s = 0; s < (w.cols() >> w.super_shift()); ++s) {
    int32_t isum = 0, imin = 0;
    for (int b = s * subs; b < (s + 1) * subs; ++b) {
      int32_t dot = 0;
      for (int k = b * B; k < (b + 1) * B; ++k) dot += w.code(p, k, j) * x[k];
      const int32_t xsum = xq.sum(row, b * B, B);
      isum += w.sub_scale(p, b, j) * (dot - w.code_offset() * xsum);
      imin += w.sub_min(p, b, j) * xsum;
    }
    const float x_scale = xq.scale(row, s << w.super_shift());
    float t = w.super_scale(p, s, j) * (x_scale * static_cast<float>(isum));
    if (w.has_mins()) t = t - w.super_min(p, s, j) * (x_scale * static_cast<float>(imin));
    total += t;
  }
  return total;
}

void int8_tile_generic(const TileArgs& a) {
  for_each_output(a, [&](int m, int p, int j, int n) {
    return int8_output_generic(*a.w, p, j, *a.xq, a.m0 + m) + (a.bias ? a.bias[n] : 0.0f);
  });
}

using TileFn = void (*)(const TileArgs&);

TileFn tile_for(Isa isa, const PackedMatrix& w, int M) {
  const PanelStorage storage = w.storage();
  if (storage == PanelStorage::kInt8) {
    if (isa >= Isa::kAmxInt8 && M >= kAmxMinRows && w.quant_block() <= 32)
      return gemm_int8_tile_amx;
    return isa >= Isa::kAvx512Vnni ? gemm_int8_tile_vnni
           : isa == Isa::kAvxVnni  ? gemm_int8_tile_avxvnni
           : isa >= Isa::kAvx2     ? gemm_int8_tile_avx2
                                   : gemm_tile_generic;
  }
  if (storage == PanelStorage::kBF16 && isa >= Isa::kAvx512) {
    const bool batch = M >= kBf16BatchMinRows;
    if (isa >= Isa::kAvx512Bf16 && (!batch || bf16_batch_tile() == Bf16BatchTile::kDot))
      return gemm_bf16_tile_dot;
    if (batch) return gemm_bf16_tile_fma;
  }
  return isa >= Isa::kAvx512 ? gemm_tile_avx512
         : isa >= Isa::kAvx2 ? gemm_tile_avx2
                             : gemm_tile_generic;
}

struct TileShape {
  int rows, panels;
  int k_chunk = 0;          // the f32 tile's k range per pass (0: all of K)
  bool fetch_next = false;  // row tiles after the first fetch the thread's next group (TileArgs)
  int group_block = 1;      // panel groups a thread takes at once, their tiles row tile by row tile
};

// Prefill shapes (this many row tiles or more) take up to 3 panel groups at once, as many as
// fit in 1.25 MiB of L2 beside the activations: a row tile's activations (8 rows of K) stay in
// L1 from one group's tile to the next, where one group at a time reloaded them from L2 for
// every tile. BM_Gemm f32, M = 512, 2 threads, medians of 6 interleaved rounds, 1 -> 3 groups:
// N x K = 4096 x 768 388 -> 413, 2304 x 768 388 -> 414, 768 x 2048 426 -> 437, 3072 x 2048
// 418 -> 433 GFLOP/s; 4 groups lost at K = 2048, and any block lost at K = 8192 (k ranges of
// 4096, 786 KiB per group).
constexpr int kGroupBlockMinRowTiles = 16;
constexpr size_t kGroupBlockL2Bytes = size_t{5} << 18;
constexpr size_t kMaxGroupBlock = 3;

// The AVX-512 f32 tile takes 8 rows and 3 panels for batches, 6 and 4 for up to 6 rows: per k,
// 24 FMAs are fed by 3 weight lines and 8 broadcasts or by 4 and 6, where fewer leave the loads
// (with the prefetches) as busy as the two FMA pipes. With 8 rows a batch of 32 takes 4 passes
// over each group rather than 6, and only the first waits on DRAM (BM_Gemm f32, N = 16384,
// K = 2048, 2 threads, interleaved: M=32 249-250 -> 258-261 GFLOP/s, M=64 265-271 -> 277-292,
// M=128 296-299 -> 314-316; M=512 unchanged). The row tiles reuse a panel group from L2, so a
// group holds at most 1 MiB of a 2 MiB L2: past K = 4096 the tiles take K in ranges of 4096
// (BM_Gemm f32 K = 8192, 2 threads: M=512 263-276 -> 302-309 GFLOP/s, M=32 223 -> 248-255,
// against a 2-panel group over all of K).
// A batch's first pass over a group waits on DRAM, which one core streams at about half of the
// machine's bandwidth (BM_StreamRead, 1 thread), and its later passes leave DRAM idle. So
// those passes fetch the thread's next group, one line per k step in the order its first pass
// reads them: 1 + 3 passes of 32 rows fetch all of 3 panels (BM_Gemm f32 N = 16384, K = 2048,
// 2 threads, interleaved: M=16 213 -> 237 GFLOP/s, M=32 241-255 -> 274-296, M=64 291 -> 317;
// M=128 and 512 unchanged). Fetching in panel order, or spread over all passes, gained nothing.
// Not with k ranges: a range and the next one do not fit in L2 together with the rows.
constexpr int kF32GroupMaxK = (1 << 20) / (kMaxTilePanels * PackedMatrix::kPanel * 4);
static_assert(kF32GroupMaxK % kKBlock == 0, "k ranges are whole blocks");

TileShape tile_shape(TileFn tile, PanelStorage storage, int M, int K) {
  if (tile == gemm_int8_tile_amx) return {kAmxTileRows, 2};
  if (tile == gemm_tile_avx2 && storage == PanelStorage::kF32 && M == 1) return {1, 4};  // decode
  if (tile == gemm_tile_avx2) return {kAvx2Rows, 2, 0, true};
  if (tile == gemm_int8_tile_avx2 || tile == gemm_int8_tile_avxvnni) return {kAvx2Int8Rows, 2};
  if (tile == gemm_int8_tile_vnni) return {kVnniRows, 2};
  if (tile == gemm_bf16_tile_dot || tile == gemm_bf16_tile_fma) return {kBf16DotRows, 2};
  if (tile != gemm_tile_avx512 || storage != PanelStorage::kF32) return {kMaxTileRows, 2};
  const int k_chunk = K > kF32GroupMaxK ? kF32GroupMaxK : 0;
  if (M > kMaxTileRows + 2) {
    const bool prefill = M >= kGroupBlockMinRowTiles * kF32BatchRows;
    const size_t group_bytes =
        size_t{kF32BatchPanels} * (k_chunk ? k_chunk : K) * PackedMatrix::kPanel * sizeof(float);
    const int block = prefill ? static_cast<int>(std::clamp<size_t>(
                                    kGroupBlockL2Bytes / group_bytes, 1, kMaxGroupBlock))
                              : 1;
    return {kF32BatchRows, kF32BatchPanels, k_chunk, k_chunk == 0, block};
  }
  return {kMaxTileRows + 2, kMaxTilePanels, k_chunk};
}

}  // namespace

namespace {

// Minus code_offset times the xsums of k = 0, 1 and of k = 2, 3 mod 4 over [k0, k0 + n), as the
// low and high int16 of one word.
int32_t offset_halves_of(const QuantizedActivations& xq, int m, int k0, int n, int offset) {
  int32_t low = 0, high = 0;
  const int8_t* x = xq.row(m) + k0;
  for (int k = 0; k < n; k += 4) {
    low += x[k] + x[k + 1];
    high += x[k + 2] + x[k + 3];
  }
  const auto half = [](int32_t v) { return static_cast<uint32_t>(static_cast<uint16_t>(v)); };
  return static_cast<int32_t>(half(-offset * low) | half(-offset * high) << 16);
}

}  // namespace

void SubBlockRowFactors::compute(const PackedMatrix& w, const QuantizedActivations& xq, int M,
                                 bool offset_halves_too) {
  const int B = w.quant_block(), subs = w.sub_blocks_per_super();
  super_blocks = w.cols() >> w.super_shift();
  pairs = (subs + 1) / 2;
  const size_t n = static_cast<size_t>(M) * static_cast<size_t>(super_blocks);
  offset_xsum.resize(n);
  offset_halves.resize(offset_halves_too ? n : 0);
  x_scale.resize(n);
  xsum_pairs.resize(n * static_cast<size_t>(pairs));
  // A sub-block's xsum is at most 32 * 127 in magnitude, so it fits an int16 half.
  const auto half = [](int32_t v) { return static_cast<uint32_t>(static_cast<uint16_t>(v)); };
  // Split over the threads by row like the quantization before it: on one thread it left the
  // others waiting for about 1 % of a Q8_0 prefill (llama-110m pp512, perf).
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(M) * xq.K > 65536)
  for (int m = 0; m < M; ++m) {
    for (int s = 0; s < super_blocks; ++s) {
      const int k0 = s << w.super_shift();
      offset_xsum[at(m, s)] = w.code_offset() * xq.sum(m, k0, subs * B);
      if (offset_halves_too)
        offset_halves[at(m, s)] = offset_halves_of(xq, m, k0, subs * B, w.code_offset());
      x_scale[at(m, s)] = xq.scale(m, k0);
      int32_t* out = xsum_pairs.data() + at(m, s) * static_cast<size_t>(pairs);
      for (int i = 0; i < pairs; ++i) {
        const int32_t even = xq.sum(m, k0 + 2 * i * B, B);
        const int32_t odd = 2 * i + 1 < subs ? xq.sum(m, k0 + (2 * i + 1) * B, B) : 0;
        out[i] = static_cast<int32_t>(half(even) | half(odd) << 16);
      }
    }
  }
}

void interleave_quads(const QuantizedActivations& xq, int tiles, std::vector<int32_t>& out) {
  const int steps = xq.K / 4;
  out.resize(static_cast<size_t>(xq.M) * static_cast<size_t>(steps));
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(xq.M) * xq.K > 65536)
  for (int t = 0; t < tiles; ++t) {
    const int m0 = row_tile_begin(xq.M, tiles, t);
    const int mr = row_tile_begin(xq.M, tiles, t + 1) - m0;
    int32_t* block = out.data() + static_cast<size_t>(m0) * static_cast<size_t>(steps);
    for (int r = 0; r < mr; ++r) {
      for (int q = 0; q < steps; ++q)
        block[static_cast<size_t>(q) * static_cast<size_t>(mr) + static_cast<size_t>(r)] =
            xq.quad(m0 + r, 4 * q);
    }
  }
}

// The reference path: the exact orders of gemm.h, written plainly.
void gemm_tile_generic(const TileArgs& a) {
  if (a.w->storage() == PanelStorage::kInt8) {
    int8_tile_generic(a);
  } else if (a.w->storage() == PanelStorage::kBF16) {
    bf16_tile_generic(a);
  } else {
    float_tile_generic(a);
  }
}

void gemm_packed(Isa isa, const float* x, int M, const PackedMatrix& w, float* y,
                 const float* bias) {
  const TileFn tile = tile_for(isa, w, M);
  // One quantization per call, shared by all tiles; thread_local as gemm_packed may be called
  // from several engine threads.
  thread_local QuantizedActivations xq;
  thread_local Bf16Activations xb;
  if (w.storage() == PanelStorage::kInt8)
    quantize_activations(isa, x, M, w.cols(), xq, 1 << w.super_shift());
  if (w.storage() == PanelStorage::kBF16) {
    round_activations_to_bf16(isa, x, M, w.cols(), xb);
    if ((tile == gemm_tile_avx2 && M > 2) || tile == gemm_bf16_tile_fma) widen_bf16_activations(xb);
  }
  thread_local SubBlockRowFactors xf;
  const bool ymm_int8 = tile == gemm_int8_tile_avx2 || tile == gemm_int8_tile_avxvnni;
  if (tile == gemm_int8_tile_amx || tile == gemm_int8_tile_vnni || ymm_int8) {
    // Q4_0 on the 256-bit tile starts its 16-bit sums at the offset term's halves
    // (gemm_int8_ymm.h); with AVX-VNNI only tiles of 1 or 2 rows take those sums, and every row
    // tile has more than 2 rows where M does.
    const bool offset_halves = (tile == gemm_int8_tile_avx2 || M <= 2) && ymm_int8;
    xf.compute(w, xq, M,
               offset_halves && w.code_bits() == 4 && !w.table_codes() && !w.has_mins() &&
                   w.unit_sub_scales() && w.sub_blocks_per_super() == 1 && w.code_offset() != 0);
  }
  const SubBlockRowFactors* row_factors = &xf;
  const QuantizedActivations* quantized = &xq;  // this thread's, not each worker's
  const Bf16Activations* rounded = &xb;
  const int K = w.cols(), N = w.rows();
  const TileShape shape = tile_shape(tile, w.storage(), M, K);
  const int panel_groups = (w.panels() + shape.panels - 1) / shape.panels;
  const int row_tiles = (M + shape.rows - 1) / shape.rows;
  // Rows split evenly over the row tiles (7 rows: 4 3, not 6 1): a tile of few rows loads as many
  // weights for less work.
  const auto row_begin = [&](int rt) { return row_tile_begin(M, row_tiles, rt); };
  thread_local std::vector<int32_t> quads;
  if (ymm_int8) interleave_quads(xq, row_tiles, quads);
  const int32_t* tile_quads = ymm_int8 ? quads.data() : nullptr;
  const auto tile_args = [&](int group, int rt) {
    const int m0 = row_begin(rt), p = group * shape.panels;
    TileArgs args{x + static_cast<size_t>(m0) * K,
                  K,
                  row_begin(rt + 1) - m0,
                  K,
                  &w,
                  p,
                  std::min(shape.panels, w.panels() - p),
                  y + static_cast<size_t>(m0) * N,
                  N,
                  N,
                  bias,
                  quantized,
                  m0,
                  rounded,
                  row_factors};
    if (tile_quads) args.quads = tile_quads + static_cast<size_t>(m0) * static_cast<size_t>(K / 4);
    return args;
  };
  const bool parallel = static_cast<int64_t>(M) * N * K > 65536;
  const bool flush = w.storage() == PanelStorage::kBF16 && tile != gemm_tile_generic;
  // Each thread that ran AMX tiles releases them when its share is done.
  struct ReleaseTiles {
    bool amx;
    ~ReleaseTiles() {
      if (amx) amx_release_tiles();
    }
  };
  if (row_tiles == 1) {
    // Decode: a contiguous share per thread keeps each thread's weight stream sequential, which
    // the prefetchers need (llama-110m q8_0 tg128, interleaved: 260-270 tok/s static, 200-229
    // with one panel pair per grab); a thread done early takes groups from the back of another's.
    WorkShares shares(panel_groups, parallel ? omp_get_max_threads() : 1);
#pragma omp parallel if (parallel) num_threads(shares.threads())
    {
      const FlushDenormals flushing(flush);
      const ReleaseTiles release{tile == gemm_int8_tile_amx};
      const int t = omp_get_thread_num();
      for (int g = shares.next(t); g >= 0; g = shares.next(t)) tile(tile_args(g, 0));
    }
    return;
  }
  // Panel groups outermost so that a thread reuses one weight panel across its row tiles. Threads
  // take one unit of groups at a time (a group, or a block of shape.group_block): on this shared
  // host one core is often slowed, and a static split left the other waiting (bench_kernels
  // BM_Gemm medians of 7: 3-10 % faster dynamic). The last units are single groups, so that
  // the threads finish close together.
  // Each thread claims its next unit before it runs the current one, so that where the shape
  // says so its row tiles after the first can fetch the next unit's groups while they compute.
  const GemmUnits units(panel_groups, row_tiles, shape.group_block, omp_get_max_threads());
  std::atomic<int> claimed{0};
#pragma omp parallel if (parallel)
  {
    const FlushDenormals flushing(flush);
    const ReleaseTiles release{tile == gemm_int8_tile_amx};
    const int k_ranges = shape.k_chunk ? (K + shape.k_chunk - 1) / shape.k_chunk : 1;
    const auto group_panels = [&](int g) {
      return std::min(shape.panels, w.panels() - g * shape.panels);
    };
    for (int u = claimed.fetch_add(1, std::memory_order_relaxed); u < units.count();) {
      const int next = claimed.fetch_add(1, std::memory_order_relaxed);
      const GemmUnits::Unit unit = units.at(u);
      // The next unit's groups, fetched by this unit's tiles unless they are this unit's own.
      GemmUnits::Unit ahead = next < units.count() ? units.at(next) : GemmUnits::Unit{};
      if (ahead.g0 == unit.g0) ahead.g1 = ahead.g0;
      // Its row tiles run over each k range in turn, each row tile over the unit's groups.
      for (int r = 0; r < k_ranges; ++r) {
        for (int rt = unit.rt0; rt < unit.rt1; ++rt) {
          for (int g = unit.g0; g < unit.g1; ++g) {
            TileArgs args = tile_args(g, rt);
            args.k_begin = r * shape.k_chunk;
            args.k_end = r + 1 == k_ranges ? K : args.k_begin + shape.k_chunk;
            args.resume = r > 0;
            args.finish = r + 1 == k_ranges;
            // The group in the same place of the next unit, fetched by this group's tiles.
            const int fetched = ahead.g0 + (g - unit.g0);
            if (shape.fetch_next && rt > unit.rt0 && fetched < ahead.g1 &&
                group_panels(fetched) == group_panels(g)) {
              args.next_p = fetched * shape.panels;
              args.next_line = (rt - unit.rt0 - 1) * K;
            }
            tile(args);
          }
        }
      }
      u = next;
    }
  }
}

void gemm_packed(const float* x, int M, const PackedMatrix& w, float* y, const float* bias) {
  if (uses_onednn(w, M)) {
    thread_local Bf16Activations xb;
    round_activations_to_bf16(active_isa(), x, M, w.cols(), xb);
    if (gemm_bf16_onednn(xb, M, w, y, bias)) return;
  }
  gemm_packed(active_isa(), x, M, w, y, bias);
}

}  // namespace pagedllm::cpu
