// AVX2 + FMA GEMM tile (compiled with -mavx2 -mfma; called only when the CPU has them). Same
// orders as gemm_tile_generic: for f32 weights one FMA chain per block; for bf16 weights, two FMAs
// per k pair (odd k, then even k) with denormals flushed, which is what vdpbf16ps computes. A panel
// of 16 outputs is two 8-lane vectors. f32 takes up to kAvx2Rows rows of one panel at a time:
// 12 independent FMA chains cover the FMA latency (4-5 cycles at 2 per cycle), and per k 2 weight
// loads and 6 broadcasts feed 12 FMAs. bf16 has two chains per output: batches take up to
// kAvx2Rows rows of a whole panel and run a block's two chains one after the other
// (bf16_batch_rows), with the activations widened to f32 once per product
// (Bf16Activations::widened) so that each row's pair is two broadcasts from memory rather than a
// shift and a mask per panel; decode takes whole panels, one row at a time.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/stream_prefetch.h"

namespace pagedllm::cpu {

namespace {

constexpr int kHalves = PackedMatrix::kPanel / 8;
// A panel's step reads one 64-byte line: 16 f32 outputs of one k, or 16 bf16 pairs of one k pair.
constexpr int kLineBytes = PackedMatrix::kPanel * 4;

// A bf16 pair lane (k = 2i low, 2i + 1 high) widened to f32.
inline __m256 even_of(__m256i v) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
inline __m256 odd_of(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(~0xFFFF)));
}

// y's rows [m_offset, m_offset + MR), columns [n0, n0 + W) up to n_end: the totals plus the bias
// (plus 0 without one, so that a -0 total gives +0 on every path). Whole rows take vector
// stores: one element at a time, the writes took 7 % of bf16_batch_rows' samples in a prefill
// (llama-110m pp512 on the AVX2 paths, alternating: bf16 778-931 -> 859-937 tokens/s, f32
// 890-968 -> 1006-1031).
template <int MR, int W>
void write_rows(const TileArgs& a, int m_offset, int n0, const float (&total)[MR][W]) {
  if (n0 + W <= a.n_end) {
    for (int m = 0; m < MR; ++m) {
      float* y = a.y + static_cast<size_t>(m_offset + m) * a.ldy + n0;
      for (int c = 0; c < W; c += 8) {
        const __m256 bias = a.bias ? _mm256_loadu_ps(a.bias + n0 + c) : _mm256_setzero_ps();
        _mm256_storeu_ps(y + c, _mm256_add_ps(_mm256_load_ps(&total[m][c]), bias));
      }
    }
    return;
  }
  for (int m = 0; m < MR; ++m) {
    for (int c = 0; c < W && n0 + c < a.n_end; ++c) {
      a.y[static_cast<size_t>(m_offset + m) * a.ldy + n0 + c] =
          total[m][c] + (a.bias ? a.bias[n0 + c] : 0.0f);
    }
  }
}

// Rows [m_offset, m_offset + MR) of the tile against V 8-output vectors of the panels from p.
// fetch (batches, MR > 1): the panel whose line k the pass fetches into L2 at step k (fetch_panel).
template <int MR, int V, PanelStorage kS>
void rows(const TileArgs& a, int p, int m_offset, const char* fetch = nullptr) {
  constexpr bool kPairs = kS == PanelStorage::kBF16;
  // A step is one k, or one k pair for bf16.
  constexpr int kBlock = kPairs ? kKBlock / 2 : kKBlock;
  const int count = kPairs ? a.xb->pairs : a.K;
  alignas(32) float total[MR][V * 8] = {};
  // Every pointer the steps read through, set once: computed per step from the TileArgs, the
  // address arithmetic took the integer ports the FMAs share (about 14 instructions per 12 FMAs).
  // Panels from p; a vector's column is its panel's base plus a constant, so the loads share base
  // registers.
  constexpr int kSpan = (V + kHalves - 1) / kHalves;
  const float* f32_panels[kSpan] = {};
  const uint16_t* bf16_panels[kSpan] = {};
  for (int q = 0; q < kSpan && p + q < a.w->panels(); ++q) {
    if constexpr (kPairs) {
      bf16_panels[q] = a.w->bf16_panel(p + q);
    } else {
      f32_panels[q] = a.w->f32_panel(p + q);
    }
  }
  const auto f32_column = [&](int v) { return f32_panels[v / kHalves] + (v % kHalves) * 8; };
  const auto bf16_column = [&](int v) { return bf16_panels[v / kHalves] + (v % kHalves) * 16; };
  const float* x_rows[MR] = {};
  const uint32_t* pair_rows[MR] = {};
  for (int m = 0; m < MR; ++m) {
    if constexpr (kPairs) {
      pair_rows[m] = a.xb->row(a.m0 + m_offset + m);
    } else {
      x_rows[m] = a.x + static_cast<size_t>(m_offset + m) * a.ldx;
    }
  }
  for (int k0 = 0; k0 < count; k0 += kBlock) {
    const int k1 = std::min(count, k0 + kBlock);
    __m256 part[2][MR][V];  // the block's even and odd steps
    for (int e = 0; e < 2; ++e) {
      for (int m = 0; m < MR; ++m) {
        for (int v = 0; v < V; ++v) part[e][m][v] = _mm256_setzero_ps();
      }
    }
    const auto f32_step = [&](int k, __m256(&chain)[MR][V]) __attribute__((always_inline)) {
      __m256 w[V];
      for (int v = 0; v < V; ++v) w[v] = _mm256_load_ps(f32_column(v) + k * PackedMatrix::kPanel);
      if constexpr (MR > 1) _mm_prefetch(fetch + k * kLineBytes, _MM_HINT_T1);
      if constexpr (MR == 1) {
        // f32 decode streams each panel once from DRAM, and the hardware prefetcher alone leaves
        // it below the bandwidth: one line per panel and k is fetched ahead, as the AVX-512
        // and int8 tiles do (stream_prefetch.h; llama-110m f32 tg128 on the AVX2 paths, 2 KB
        // ahead, alternating: 50.2-53.7 -> 62.5-65.5).
        for (int v = 0; v < V; v += kHalves)
          prefetch_stream(f32_column(v) + k * PackedMatrix::kPanel);
      }
      for (int m = 0; m < MR; ++m) {
        const __m256 xb = _mm256_broadcast_ss(x_rows[m] + k);
        for (int v = 0; v < V; ++v) chain[m][v] = _mm256_fmadd_ps(xb, w[v], chain[m][v]);
      }
    };
    const auto pair_step = [&](int i, __m256(&chain)[MR][V]) __attribute__((always_inline)) {
      __m256i w[V];
      for (int v = 0; v < V; ++v) {
        w[v] = _mm256_load_si256(
            reinterpret_cast<const __m256i*>(bf16_column(v) + i * 2 * PackedMatrix::kPanel));
      }
      if constexpr (MR == 1) {
        // bf16 decode likewise, one line per panel and k pair (alternating: llama-110m tg64
        // 103-107 -> 134-138 tok/s, llama-1b tg32 9.3-9.5 -> 11.6-11.8; 4 KB ahead no better).
        for (int v = 0; v < V; v += kHalves)
          prefetch_stream(bf16_column(v) + i * 2 * PackedMatrix::kPanel);
      }
      for (int m = 0; m < MR; ++m) {
        const __m256i x = _mm256_set1_epi32(static_cast<int>(pair_rows[m][i]));
        const __m256 x_odd = odd_of(x), x_even = even_of(x);
        for (int v = 0; v < V; ++v) {
          chain[m][v] = _mm256_fmadd_ps(x_odd, odd_of(w[v]), chain[m][v]);
          chain[m][v] = _mm256_fmadd_ps(x_even, even_of(w[v]), chain[m][v]);
        }
      }
    };
    const auto step = [&](int k, __m256(&chain)[MR][V]) __attribute__((always_inline)) {
      if constexpr (kPairs) {
        pair_step(k, chain);
      } else {
        f32_step(k, chain);
      }
    };
    if constexpr (kPairs) {
      int k = k0;
      for (; k + 1 < k1; k += 2) {
        step(k, part[0]);
        step(k + 1, part[1]);
      }
      if (k < k1) step(k, part[0]);
    } else {
      for (int k = k0; k < k1; ++k) step(k, part[0]);  // f32: one chain
    }
    for (int m = 0; m < MR; ++m) {
      for (int v = 0; v < V; ++v) {
        const __m256 block = kPairs ? _mm256_add_ps(part[0][m][v], part[1][m][v]) : part[0][m][v];
        _mm256_store_ps(&total[m][v * 8], _mm256_add_ps(_mm256_load_ps(&total[m][v * 8]), block));
      }
    }
  }
  write_rows<MR, V * 8>(a, m_offset, p * PackedMatrix::kPanel, total);
}

// f32: each panel in row groups of up to kAvx2Rows, the rows split evenly (5 rows: 5, not
// 6 + nothing; 7: 4 + 3).
template <int MR>
void f32_rows(const TileArgs& a, int p, int m, int count, const char* fetch) {
  if constexpr (MR > 1) {
    if (count < MR) return f32_rows<MR - 1>(a, p, m, count, fetch);
  }
  rows<MR, kHalves, PanelStorage::kF32>(a, p, m, fetch);
}

// The panel that row group g's pass over panel q of this tile fetches into L2, line by line as
// it reads its own: panel q of the group this thread runs next (TileArgs::next_p), or panel q
// itself (fetches that hit the cache). Without it a batch's first row tile over a group waited
// on DRAM. One row group's pass covers the whole next group, so only the first row group of the
// tile given next_line 0 fetches it. llama-110m bf16 batched 32 x (128 + 128) on the AVX2 paths,
// 4 alternating rounds: 625-631 -> 628-694 tok/s (into L1: 653-669); f32 +2-4 %; pp512 unchanged.
const char* fetch_panel(const TileArgs& a, int q, int g) {
  const bool next = g == 0 && a.next_p >= 0 && a.next_line == 0;
  const int p = (next ? a.next_p : a.p) + q;
  return reinterpret_cast<const char*>(a.w->storage() == PanelStorage::kBF16
                                           ? static_cast<const void*>(a.w->bf16_panel(p))
                                           : static_cast<const void*>(a.w->f32_panel(p)));
}

// The first of `rows` rows that group g of `groups` takes, the rows split evenly.
int group_begin(int rows, int groups, int g) {
  return g * (rows / groups) + std::min(g, rows % groups);
}

void dispatch_f32(const TileArgs& a) {
  // Decode (tile_shape gives one row 4 panels): all panels in one pass, so that 8 FMA chains
  // rather than 2 hide the FMA latency on the weights that come from cache, and 4 streams are in
  // flight (llama-110m f32 tg64 on the AVX2 paths, 3 alternating rounds: one panel per pass
  // 64.9-67.8 tok/s, two 67.9-70.0, four 68.6-71.1).
  if (a.mr == 1 && a.np == 4) return rows<1, 4 * kHalves, PanelStorage::kF32>(a, a.p, 0);
  if (a.mr == 1 && a.np == 2) return rows<1, 2 * kHalves, PanelStorage::kF32>(a, a.p, 0);
  const int groups = (a.mr + kAvx2Rows - 1) / kAvx2Rows;
  for (int q = 0; q < a.np; ++q) {
    for (int g = 0; g < groups; ++g) {
      const int m = group_begin(a.mr, groups, g);
      f32_rows<kAvx2Rows>(a, a.p + q, m, group_begin(a.mr, groups, g + 1) - m,
                          fetch_panel(a, q, g));
    }
  }
}

// bf16 batches: rows [m_offset, m_offset + MR) against the whole panel p, one chain at a time.
// gemm.h's two chains per block (its even and odd pairs) are independent, so a block runs all of
// its even pairs, then all of its odd ones, and only one chain's MR x 2 accumulators are live:
// per pair a row's two broadcasts (its odd k, then its even k) feed 4 FMAs, and the panel's line
// widens once for all rows (BM_Gemm bf16 M=512 N=4096 K=768 on the AVX2 paths, one thread:
// 6 rows of a half panel with both chains live 64.6 GFLOP/s, 6 rows of a whole panel 88-90, as
// f32 runs there).
template <int MR>
void bf16_batch_rows(const TileArgs& a, int p, int m_offset, const char* fetch) {
  constexpr int kPairBlock = kKBlock / 2;
  const uint16_t* panel = a.w->bf16_panel(p);
  const float* wide_rows[MR];
  for (int m = 0; m < MR; ++m) wide_rows[m] = a.xb->widened_row(a.m0 + m_offset + m);
  const int pairs = a.xb->pairs;
  alignas(32) float total[MR][PackedMatrix::kPanel] = {};
  for (int i0 = 0; i0 < pairs; i0 += kPairBlock) {
    const int i1 = std::min(pairs, i0 + kPairBlock);
    __m256 even_chain[MR][kHalves];
    for (int chain = 0; chain < 2; ++chain) {
      __m256 acc[MR][kHalves];
      for (int m = 0; m < MR; ++m) {
        for (int v = 0; v < kHalves; ++v) acc[m][v] = _mm256_setzero_ps();
      }
      for (int i = i0 + chain; i < i1; i += 2) {
        const uint16_t* line = panel + static_cast<size_t>(i) * 2 * PackedMatrix::kPanel;
        _mm_prefetch(fetch + static_cast<size_t>(i) * kLineBytes, _MM_HINT_T1);
        __m256i w[kHalves];
        for (int v = 0; v < kHalves; ++v)
          w[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(line + v * 16));
        __m256 odd[kHalves];
        for (int v = 0; v < kHalves; ++v) odd[v] = odd_of(w[v]);
        for (int m = 0; m < MR; ++m) {
          const __m256 x = _mm256_broadcast_ss(wide_rows[m] + 2 * i + 1);
          for (int v = 0; v < kHalves; ++v) acc[m][v] = _mm256_fmadd_ps(x, odd[v], acc[m][v]);
        }
        __m256 even[kHalves];
        for (int v = 0; v < kHalves; ++v) even[v] = even_of(w[v]);
        for (int m = 0; m < MR; ++m) {
          const __m256 x = _mm256_broadcast_ss(wide_rows[m] + 2 * i);
          for (int v = 0; v < kHalves; ++v) acc[m][v] = _mm256_fmadd_ps(x, even[v], acc[m][v]);
        }
      }
      for (int m = 0; m < MR; ++m) {
        for (int v = 0; v < kHalves; ++v) {
          if (chain == 0) {
            even_chain[m][v] = acc[m][v];
          } else {
            float* out = &total[m][v * 8];
            const __m256 block = _mm256_add_ps(even_chain[m][v], acc[m][v]);
            _mm256_store_ps(out, _mm256_add_ps(_mm256_load_ps(out), block));
          }
        }
      }
    }
  }
  write_rows<MR, PackedMatrix::kPanel>(a, m_offset, p * PackedMatrix::kPanel, total);
}

template <int MR>
void bf16_batch_group(const TileArgs& a, int p, int m, int count, const char* fetch) {
  if constexpr (MR > 1) {
    if (count < MR) return bf16_batch_group<MR - 1>(a, p, m, count, fetch);
  }
  bf16_batch_rows<MR>(a, p, m, fetch);
}

// Up to kBf16PanelRows rows (decode) take whole panels per pass with the pairs widened in
// registers, so that the weights stream once.
constexpr int kBf16PanelRows = 2;

void dispatch_bf16(const TileArgs& a) {
  if (a.mr <= kBf16PanelRows) {
    for (int m = 0; m < a.mr; ++m) {
      if (a.np == 2) {
        rows<1, 2 * kHalves, PanelStorage::kBF16>(a, a.p, m);
      } else {
        rows<1, kHalves, PanelStorage::kBF16>(a, a.p, m);
      }
    }
    return;
  }
  const int groups = (a.mr + kAvx2Rows - 1) / kAvx2Rows;
  for (int q = 0; q < a.np; ++q) {
    for (int g = 0; g < groups; ++g) {
      const int m = group_begin(a.mr, groups, g);
      bf16_batch_group<kAvx2Rows>(a, a.p + q, m, group_begin(a.mr, groups, g + 1) - m,
                                  fetch_panel(a, q, g));
    }
  }
}

}  // namespace

void gemm_tile_avx2(const TileArgs& a) {
  if (a.w->storage() == PanelStorage::kBF16) {
    const FlushDenormals flush;
    dispatch_bf16(a);
  } else {
    dispatch_f32(a);
  }
}

}  // namespace pagedllm::cpu
