// AVX-512 attention over a context's chunks, in the exact order of attention_tile.h.
//
// Why groups: one query's score for a chunk is a chain of D dependent FMAs, and the FMA units
// need several independent chains to stay busy. So a kernel call scores NQ queries x C chunks
// at once, and every K and V vector loaded is used by all the queries of the group.
//
// Groups of 2, 4 or 8 queries of one kv head (a prompt's, or a GQA model's decode step) run in
// phases of a few chunks (attend_phased): the scores of all of them (16 chains), then their
// softmax (a long dependent chain of max, exp and sum per chunk, two chunks side by side, with
// the queries' maxima, sums and corrections reduced side by side in one vector), then their
// value products, with each query's accumulator held in registers across the phase. A query
// alone runs in strips of up to 8 chunks (attend_one), their softmax side by side.
//
// GCC 12's AVX-512 headers seed masked builtins with _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports at every use (GCC bug 105593); nothing here reads an
// undefined value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/bf16_rounding.h"

namespace pagedllm::cpu::attention {

namespace {

// attention_tile.h's tree_sum16: (o, o + 8), (o, o + 4), (o, o + 2), (o, o + 1).
inline float tree_sum16(__m512 v) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), hi);
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
// bf16 widened to f32: exactly the value dequant.h's bf16_to_f32() gives.
inline __m512 load16(const uint16_t* p) {
  const __m512i wide =
      _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, wide, 16));
}

// fp8 E4M3 widened to f32 as dequant.h's fp8_e4m3_to_f32() does: the magnitude bits moved into
// an f16, converted, and scaled by 2^8 (exact).
inline __m512 load16(const uint8_t* p) {
  const __m512i b =
      _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i sign = _mm512_maskz_slli_epi32(
      0xFFFF, _mm512_maskz_and_epi32(0xFFFF, b, _mm512_set1_epi32(0x80)), 8);
  const __m512i magnitude = _mm512_maskz_slli_epi32(
      0xFFFF, _mm512_maskz_and_epi32(0xFFFF, b, _mm512_set1_epi32(0x7F)), 7);
  const __m256i h = _mm512_cvtepi32_epi16(_mm512_maskz_or_epi32(0xFFFF, sign, magnitude));
  return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
}

// q8_0 codes widened to f32 (the caller applies their scales).
inline __m512 load16(const int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline __m512 load16_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Softmax bookkeeping of one query for one chunk: p (16 weights) and the correction of acc.
inline float softmax_update(QueryState& qs, __m512 s, int first, float scale, float* p) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __mmask16 valid = _mm512_cmple_epi32_mask(lane, _mm512_set1_epi32(qs.pos - first));
  const __m512 scaled = _mm512_mask_mul_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()),
                                           valid, s, _mm512_set1_ps(scale));
  const float new_max = std::max(qs.running_max, _mm512_reduce_max_ps(scaled));
  const float correction = cpu::exp_nonpositive(qs.running_max - new_max);
  const __m512 e = _mm512_maskz_mov_ps(
      valid, cpu::exp_nonpositive(_mm512_sub_ps(scaled, _mm512_set1_ps(new_max))));
  _mm512_store_ps(p, e);
  qs.running_sum = std::fma(qs.running_sum, correction, tree_sum16(e));
  qs.running_max = new_max;
  return correction;
}

// acc = acc * correction, query by query: where a chunk's value products start.
template <int QB, int DV>
[[gnu::always_inline]] inline void scale_acc(__m512 (&acc)[QB][DV], const float* correction) {
  for (int i = 0; i < QB; ++i) {
    const __m512 c = _mm512_set1_ps(correction[i]);
    for (int v = 0; v < DV; ++v) acc[i][v] = _mm512_mul_ps(acc[i][v], c);
  }
}

// acc = acc * correction + sum over o of p[o] * V[o] for QB queries and one chunk, V loaded once
// per row (vs: a q8_0 chunk's value scales, else null).
template <int QB, int DV, typename T>
[[gnu::always_inline]] inline void add_chunk_values(__m512 (&acc)[QB][DV], const float (*p)[kChunk],
                                                    const float* correction, const T* vt,
                                                    const uint16_t* vs) {
  constexpr int D = DV * 16;
  scale_acc(acc, correction);
#pragma GCC unroll 16
  for (int j = 0; j < kChunk; ++j) {
    const int o = product_order<T>(j);
    __m512 row[DV];
    for (int v = 0; v < DV; ++v) row[v] = load16(vt + o * D + 16 * v);
    if constexpr (kIsQ8<T>) {
      // The row's scales widened at once, then lane v / 2 (16 elements per vector, 32 per scale)
      // spread over each vector.
      constexpr int kGroups = (D + kQ8Group - 1) / kQ8Group;
      const __m512 scales = _mm512_cvtph_ps(
          _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << kGroups) - 1u), vs + o * kGroups));
      for (int v = 0; v < DV; ++v) {
        row[v] = _mm512_mul_ps(row[v], _mm512_permutexvar_ps(_mm512_set1_epi32(v / 2), scales));
      }
    }
    for (int i = 0; i < QB; ++i) {
      const __m512 w = _mm512_set1_ps(p[i][o]);
      for (int v = 0; v < DV; ++v) acc[i][v] = _mm512_fmadd_ps(w, row[v], acc[i][v]);
    }
  }
}

template <int QB, int DV>
[[gnu::always_inline]] inline void load_acc(const QueryState* qs, __m512 (&acc)[QB][DV]) {
  for (int i = 0; i < QB; ++i) {
    for (int v = 0; v < DV; ++v) acc[i][v] = _mm512_loadu_ps(qs[i].acc + 16 * v);
  }
}

template <int QB, int DV>
[[gnu::always_inline]] inline void store_acc(QueryState* qs, const __m512 (&acc)[QB][DV]) {
  for (int i = 0; i < QB; ++i) {
    for (int v = 0; v < DV; ++v) _mm512_storeu_ps(qs[i].acc + 16 * v, acc[i][v]);
  }
}

// The scores of NQ queries for chunks ch0 .. ch0 + C - 1: s[i][c] = fma over d of
// q_i[d] * K[d][o], from 0. The FMA units need about 8 independent chains (NQ * C of them).
template <int NQ, int C, int DV, typename T>
[[gnu::always_inline]] inline void score_chunks(const QueryState* qs, const Chunks<T>& ctx, int ch0,
                                                int chunks, __m512 (&s)[NQ][C]) {
  for (int i = 0; i < NQ; ++i) {
    for (int c = 0; c < C; ++c) s[i][c] = _mm512_setzero_ps();
  }
  const T* kt[C];
  const T* next_k[C];  // fetched as on AVX2 (attention_avx2.cpp's score_chunks)
  const T* vt[C];
  for (int c = 0; c < C; ++c) {
    kt[c] = ctx.k[ch0 + c];
    next_k[c] = ctx.k[std::min(ch0 + C + c, chunks - 1)];
    vt[c] = ctx.v[ch0 + c];
  }
  // d in groups that share their q8_0 scales (the whole head for the other types).
  constexpr int kGroup = kIsQ8<T> && DV * 16 >= kQ8Group ? kQ8Group : DV * 16;
  for (int d0 = 0; d0 < DV * 16; d0 += kGroup) {
    __m512 scale[C];
    if constexpr (kIsQ8<T>) {
      for (int c = 0; c < C; ++c)
        scale[c] = load16_f16(ctx.ks[ch0 + c] + static_cast<size_t>(d0 / kGroup) * ctx.ldk);
    }
    const auto row_step = [&](int d) {
      __m512 k[C];
      for (int c = 0; c < C; ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(next_k[c] + static_cast<size_t>(d) * ctx.ldk),
                     _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(vt[c] + d * kChunk), _MM_HINT_T0);
        k[c] = load16(kt[c] + static_cast<size_t>(d) * ctx.ldk);
        if constexpr (kIsQ8<T>) k[c] = _mm512_mul_ps(k[c], scale[c]);
      }
      for (int i = 0; i < NQ; ++i) {
        const __m512 q = _mm512_set1_ps(qs[i].q[d]);
        for (int c = 0; c < C; ++c) s[i][c] = _mm512_fmadd_ps(q, k[c], s[i][c]);
      }
    };
    // A bf16 cache's pairs, second row first, as straight code (as on AVX2).
    if constexpr (kIsBf16<T>) {
      for (int d = d0; d < d0 + kGroup; d += 2) {
        row_step(d + 1);
        row_step(d);
      }
    } else {
      for (int d = d0; d < d0 + kGroup; ++d) row_step(d);
    }
  }
}

// The bf16 order with vdpbf16ps (attention_tile.h): the products of a pair of elements per lane
// and instruction. Its operands hold pairs in 32-bit lanes, the pair's first element in the low
// half: a query's (q[2j], q[2j + 1]), a K tile's rows 2j and 2j + 1 interleaved position by
// position, two V rows interleaved element by element, a query's (p[2j], p[2j + 1]).

// NQ queries rounded to bf16 in pairs (vcvtneps2bf16 rounds as bf16_flushed does): qp[i][j]
// for d = 2j, 2j + 1.
template <int NQ, int DV>
[[gnu::always_inline]] inline void query_pairs(const QueryState* qs, uint32_t (*qp)[DV * 8]) {
  for (int i = 0; i < NQ; ++i) {
    for (int v = 0; v < DV; ++v) {
      _mm256_store_si256(
          reinterpret_cast<__m256i*>(qp[i] + 8 * v),
          reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_loadu_ps(qs[i].q + 16 * v))));
    }
  }
}

// Lanes l of the result: (a's element l, b's element l), for the low 16 elements of each.
inline __m512i interleave16(__m512i a, __m512i b) {
  const __m512i index = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                         8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  return _mm512_permutex2var_epi16(a, index, b);
}

inline __m512i load_row16(const uint16_t* p) {
  return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline __m512 dot(__m512 acc, __m512i pairs, __m512i broadcast) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(pairs),
                          reinterpret_cast<__m512bh>(broadcast));
}

// score_chunks in the bf16 order: s[i][c] over the K rows' pairs, with the same fetches.
template <int NQ, int C, int DV>
[[gnu::always_inline]] inline void score_chunks_dot(const uint32_t (*qp)[DV * 8],
                                                    const Chunks<uint16_t>& ctx, int ch0,
                                                    int chunks, __m512 (&s)[NQ][C]) {
  for (int i = 0; i < NQ; ++i) {
    for (int c = 0; c < C; ++c) s[i][c] = _mm512_setzero_ps();
  }
  const uint16_t* kt[C];
  const uint16_t* next_k[C];
  const uint16_t* vt[C];
  for (int c = 0; c < C; ++c) {
    kt[c] = ctx.k[ch0 + c];
    next_k[c] = ctx.k[std::min(ch0 + C + c, chunks - 1)];
    vt[c] = ctx.v[ch0 + c];
  }
  const auto ld = static_cast<size_t>(ctx.ldk);
#pragma GCC unroll 2
  for (int j = 0; j < DV * 8; ++j) {
    __m512i k[C];
    for (int c = 0; c < C; ++c) {
      const uint16_t* even = kt[c] + 2 * j * ld;
      _mm_prefetch(reinterpret_cast<const char*>(next_k[c] + 2 * j * ld), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(next_k[c] + (2 * j + 1) * ld), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(vt[c] + 2 * j * kChunk), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(vt[c] + (2 * j + 1) * kChunk), _MM_HINT_T0);
      k[c] = interleave16(load_row16(even), load_row16(even + ld));
    }
    for (int i = 0; i < NQ; ++i) {
      const __m512i q = _mm512_set1_epi32(static_cast<int>(qp[i][j]));
      for (int c = 0; c < C; ++c) s[i][c] = dot(s[i][c], k[c], q);
    }
  }
}

// add_chunk_values in the bf16 order: pb[i] holds query i's 16 weights in bf16.
template <int QB, int DV>
[[gnu::always_inline]] inline void add_chunk_values_dot(__m512 (&acc)[QB][DV],
                                                        const uint16_t (*pb)[kChunk],
                                                        const float* correction,
                                                        const uint16_t* vt) {
  constexpr int D = DV * 16;
  scale_acc(acc, correction);
#pragma GCC unroll 8
  for (int o = 0; o < kChunk; o += 2) {
    __m512i rows[DV];
    for (int v = 0; v < DV; ++v)
      rows[v] =
          interleave16(load_row16(vt + o * D + 16 * v), load_row16(vt + (o + 1) * D + 16 * v));
    for (int i = 0; i < QB; ++i) {
      uint32_t pair;
      std::memcpy(&pair, pb[i] + o, sizeof pair);
      const __m512i w = _mm512_set1_epi32(static_cast<int>(pair));
      for (int v = 0; v < DV; ++v) acc[i][v] = dot(acc[i][v], rows[v], w);
    }
  }
}

// n queries' weights rounded as the bf16 order takes them: in bf16 for the dot products (pb), or
// in place, widened, for the FMAs that repeat them. Other types: nothing.
template <typename T, bool Dot>
[[gnu::always_inline]] inline void round_weights(float (*p)[kChunk], uint16_t (*pb)[kChunk],
                                                 int n) {
  for (int i = 0; i < n; ++i) {
    if constexpr (Dot) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(pb[i]),
                         reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_load_ps(p[i]))));
    } else if constexpr (kIsBf16<T>) {
      _mm512_store_ps(p[i], bf16_flushed_widened(_mm512_load_ps(p[i])));
    }
  }
}

// Lane i (i < 8) of the result: v[i]'s 16 lanes reduced by op in tree_sum16's order (o, o + 8),
// (o, o + 4), (o, o + 2), (o, o + 1). Each step adds two vectors that hold one step's halves of
// two queries, so the 8 reductions share 15 ops. Lanes 8..15 are unspecified.
template <typename Op>
inline __m512 reduce_eight(const __m512 (&v)[8], Op op) {
  __m512 pair[4];  // queries 2j, 2j + 1: 8 lanes each
  for (int j = 0; j < 4; ++j) {
    pair[j] = op(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                 _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  __m512 quad[2];  // queries 4j .. 4j + 3: 4 lanes each, one 128-bit lane per query
  for (int j = 0; j < 2; ++j) {
    quad[j] = op(_mm512_shuffle_f32x4(pair[2 * j], pair[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                 _mm512_shuffle_f32x4(pair[2 * j], pair[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  // 128-bit lane l: queries l and l + 4, two values each, then one each.
  const __m512 two = op(_mm512_shuffle_ps(quad[0], quad[1], _MM_SHUFFLE(1, 0, 1, 0)),
                        _mm512_shuffle_ps(quad[0], quad[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 one = op(_mm512_shuffle_ps(two, two, _MM_SHUFFLE(2, 0, 2, 0)),
                        _mm512_shuffle_ps(two, two, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0),
                               one);
}

// 8 queries' softmax state, lane i for query i (lanes 8..15 unused).
struct EightState {
  __m512 max, sum;
};

// softmax_update for NQ <= 8 queries at once, op for op per query, over NC consecutive chunks
// from position `first`: lane i of max and sum, p[c][i] and correction[c][i] get exactly what
// softmax_update gives query i chunk after chunk (lanes NQ..7 see empty chunks: max 0, sum 0).
// Only max and sum carry from one chunk to the next, so the chunks' reductions and exps are
// issued side by side (NC = 2: independent work for the dependent chain of each).
template <int NQ, int NC>
inline void softmax_eight(const QueryState* qs, const float (*s)[8][kChunk], int first, float scale,
                          EightState& st, float (*p)[8][kChunk], float (*correction)[kChunk]) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 valid[NC][8];
  __m512 scaled[NC][8];
  for (int c = 0; c < NC; ++c) {
    for (int i = 0; i < 8; ++i) {
      if (i >= NQ) {
        valid[c][i] = 0;
        scaled[c][i] = neg_inf;
        continue;
      }
      valid[c][i] =
          _mm512_cmple_epi32_mask(lane, _mm512_set1_epi32(qs[i].pos - first - c * kChunk));
      scaled[c][i] =
          _mm512_mask_mul_ps(neg_inf, valid[c][i], _mm512_load_ps(s[c][i]), _mm512_set1_ps(scale));
    }
  }
  __m512 corrections[NC];
  alignas(64) float max_of[NC][kChunk];
  for (int c = 0; c < NC; ++c) {
    // std::max(a, b) is (a < b ? b : a), which _mm512_max_ps(b, a) is.
    const __m512 chunk_max =
        reduce_eight(scaled[c], [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); });
    const __m512 new_max = _mm512_max_ps(chunk_max, st.max);
    corrections[c] = cpu::exp_nonpositive(_mm512_sub_ps(st.max, new_max));
    _mm512_store_ps(correction[c], corrections[c]);
    _mm512_store_ps(max_of[c], new_max);
    st.max = new_max;
  }
  __m512 sums[NC];
  for (int c = 0; c < NC; ++c) {
    __m512 e[8];
    for (int i = 0; i < 8; ++i) {
      if (i >= NQ) {
        e[i] = _mm512_setzero_ps();
        continue;
      }
      e[i] = _mm512_maskz_mov_ps(valid[c][i], cpu::exp_nonpositive(_mm512_sub_ps(
                                                  scaled[c][i], _mm512_set1_ps(max_of[c][i]))));
      _mm512_store_ps(p[c][i], e[i]);
    }
    sums[c] = reduce_eight(e, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); });
  }
  for (int c = 0; c < NC; ++c) st.sum = _mm512_fmadd_ps(st.sum, corrections[c], sums[c]);
}

// score_chunks for NQ queries and NC chunks, stored as s[c][i] (16 lanes). NQ * NC = 16
// independent chains, where 8 leave the FMA units waiting on their latency.
template <int NQ, int NC, int DV, typename T, bool Dot>
[[gnu::always_inline]] inline void score_phase(const QueryState* qs, const uint32_t (*qp)[DV * 8],
                                               const Chunks<T>& ctx, int ch, int chunks,
                                               float (*s)[8][kChunk]) {
  __m512 sum[NQ][NC];
  if constexpr (Dot) {
    score_chunks_dot<NQ, NC, DV>(qp, ctx, ch, chunks, sum);
  } else {
    score_chunks<NQ, NC, DV>(qs, ctx, ch, chunks, sum);
  }
  for (int c = 0; c < NC; ++c) {
    for (int i = 0; i < NQ; ++i) _mm512_store_ps(s[c][i], sum[i][c]);
  }
}

// Chunks per phase of attend_phased for NQ queries: at least 4, and one score pass of 16
// chains.
template <int NQ>
constexpr int kPhaseChunks = std::max(4, 16 / NQ);

// One phase's softmax weights and corrections, chunk by chunk (pb: the weights in bf16, for the
// dot products).
template <int P>
struct PhaseWeights {
  alignas(64) float p[P][8][kChunk];
  alignas(64) uint16_t pb[P][8][kChunk];
  alignas(64) float correction[P][kChunk];
};

// add_chunk_values over the n chunks of a phase for queries [i0, i0 + QB), acc held in
// registers from the first chunk to the last (the same operations, without the round trips).
template <int QB, int DV, typename T, bool Dot, int P>
[[gnu::always_inline]] inline void accumulate_phase(QueryState* qs, const PhaseWeights<P>& w,
                                                    int i0, const Chunks<T>& ctx, int ch0, int n) {
  __m512 acc[QB][DV];
  load_acc(qs + i0, acc);
  for (int c = 0; c < n; ++c) {
    if constexpr (Dot) {
      add_chunk_values_dot<QB, DV>(acc, w.pb[c] + i0, w.correction[c] + i0, ctx.v[ch0 + c]);
    } else {
      add_chunk_values<QB, DV>(acc, w.p[c] + i0, w.correction[c] + i0, ctx.v[ch0 + c],
                               value_scales(ctx, ch0 + c));
    }
  }
  store_acc(qs + i0, acc);
}

// The scores of chunks ch0 .. ch0 + n - 1 (n <= the phase's length) in passes of NC chunks,
// then of NC / 2, NC / 4, ... for the rest.
template <int NQ, int NC, int DV, typename T, bool Dot>
[[gnu::always_inline]] inline void score_range(const QueryState* qs, const uint32_t (*qp)[DV * 8],
                                               const Chunks<T>& ctx, int ch0, int n, int chunks,
                                               float (*s)[8][kChunk]) {
  int c = 0;
  for (; c + NC <= n; c += NC) score_phase<NQ, NC, DV, T, Dot>(qs, qp, ctx, ch0 + c, chunks, s + c);
  if constexpr (NC > 1) {
    if (c < n) score_range<NQ, NC / 2, DV, T, Dot>(qs, qp, ctx, ch0 + c, n - c, chunks, s + c);
  }
}

// NQ (2, 4 or 8) queries over the chunks the furthest of them reaches, in attention_tile.h's
// order for each, in phases of a few chunks: all their scores, then their softmax, then
// their value products. Each phase is a run of independent work; interleaved chunk by chunk,
// the softmax's dependent chain held the FMA units up (BM_PagedAttention, 512 queries over 512
// positions, 2 threads: 6.0-6.2 -> 5.4 ms; the paired softmax, one thread, 4-7 % more). A
// decode step of a model whose kv heads serve 2 or 4 query heads each runs here too: there the
// queries' softmax, one scalar chain per query and chunk in attend_strip, was most of the time
// (BM_PagedAttention ctx 4096, 8 kv heads of 4 queries, 2 threads, alternating, Zen 5: f32
// 195-218 -> 160-202 us, bf16 152-165 -> 112-139, q8_0 177-217 -> 159-201).
template <int NQ, int DV, typename T, bool Dot>
void attend_phased(QueryState* qs, float scale, const Chunks<T>& ctx) {
  static_assert(NQ == 2 || NQ == 4 || NQ == 8);
  constexpr int P = kPhaseChunks<NQ>, NC = 16 / NQ;
  int chunks = 0;
  for (int i = 0; i < NQ; ++i) chunks = std::max(chunks, qs[i].pos / kChunk + 1);
  alignas(64) float max_of[kChunk] = {}, sum_of[kChunk] = {};
  for (int i = 0; i < NQ; ++i) {
    max_of[i] = qs[i].running_max;
    sum_of[i] = qs[i].running_sum;
  }
  EightState st{_mm512_load_ps(max_of), _mm512_load_ps(sum_of)};
  alignas(64) uint32_t qp[NQ][DV * 8];
  if constexpr (Dot) query_pairs<NQ, DV>(qs, qp);
  constexpr int QB = NQ < 16 / DV ? NQ : 16 / DV;
  alignas(64) float s[P][8][kChunk];
  PhaseWeights<P> w;
  for (int ch0 = 0; ch0 < chunks; ch0 += P) {
    const int n = std::min(P, chunks - ch0);
    score_range<NQ, NC, DV, T, Dot>(qs, qp, ctx, ch0, n, chunks, s);
    int c = 0;
    for (; c + 2 <= n; c += 2)
      softmax_eight<NQ, 2>(qs, s + c, (ch0 + c) * kChunk, scale, st, w.p + c, w.correction + c);
    if (c < n)
      softmax_eight<NQ, 1>(qs, s + c, (ch0 + c) * kChunk, scale, st, w.p + c, w.correction + c);
    for (c = 0; c < n; ++c) round_weights<T, Dot>(w.p[c], w.pb[c], NQ);
    for (int i = 0; i < NQ; i += QB) accumulate_phase<QB, DV, T, Dot>(qs, w, i, ctx, ch0, n);
  }
  _mm512_store_ps(max_of, st.max);
  _mm512_store_ps(sum_of, st.sum);
  for (int i = 0; i < NQ; ++i) {
    qs[i].running_max = max_of[i];
    qs[i].running_sum = sum_of[i];
  }
}

// softmax_update for one query over C (2 to 8) consecutive chunks from chunk ch0, op for op:
// the chunks' maxima and sums are reduced side by side (lane c: chunk c) and their corrections
// are one vector exp; only the running maximum and sum are chains, of C short steps.
template <int C>
inline void softmax_chunks(QueryState& q, const __m512 (&s)[1][C], int ch0, float scale,
                           float (*p)[kChunk], float* correction) {
  static_assert(C >= 2 && C <= 8);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 valid[8];
  __m512 scaled[8], e[8];
  for (int c = 0; c < 8; ++c) {
    valid[c] = 0;
    scaled[c] = neg_inf;
    e[c] = _mm512_setzero_ps();
    if (c >= C) continue;
    valid[c] = _mm512_cmple_epi32_mask(lane, _mm512_set1_epi32(q.pos - (ch0 + c) * kChunk));
    scaled[c] = _mm512_mask_mul_ps(neg_inf, valid[c], s[0][c], _mm512_set1_ps(scale));
  }
  alignas(64) float chunk_max[kChunk], before[kChunk] = {}, maxima[kChunk] = {};
  alignas(64) float corrections[kChunk], sums[kChunk];
  _mm512_store_ps(chunk_max,
                  reduce_eight(scaled, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); }));
  float running = q.running_max;
  for (int c = 0; c < C; ++c) {
    before[c] = running;
    running = std::max(running, chunk_max[c]);
    maxima[c] = running;
  }
  _mm512_store_ps(corrections, cpu::exp_nonpositive(
                                   _mm512_sub_ps(_mm512_load_ps(before), _mm512_load_ps(maxima))));
  for (int c = 0; c < C; ++c) {
    e[c] = _mm512_maskz_mov_ps(
        valid[c], cpu::exp_nonpositive(_mm512_sub_ps(scaled[c], _mm512_set1_ps(maxima[c]))));
    _mm512_store_ps(p[c], e[c]);
  }
  _mm512_store_ps(sums, reduce_eight(e, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); }));
  float sum = q.running_sum;
  for (int c = 0; c < C; ++c) {
    sum = std::fma(sum, corrections[c], sums[c]);
    correction[c] = corrections[c];
  }
  q.running_sum = sum;
  q.running_max = running;
}

// One query over chunks ch0 .. ch0 + C - 1 (C score chains), its accumulator held in registers
// across them; Dot: the bf16 order on vdpbf16ps, from the query's pairs qp. A decode step of a
// model whose kv heads serve one query head each runs here. The chunks' softmax side by side
// rather than one scalar chain per chunk (BM_PagedAttention, 12 kv heads, one thread,
// alternating, four rounds, Zen 5: bf16 ctx 250 16.9-21.8 -> 15.2-19.6 us, ctx 4096 280-380 ->
// 272-340; f32 ctx 250 unchanged, 24-30).
template <int C, int DV, typename T, bool Dot>
void attend_strip(QueryState& q, const uint32_t (*qp)[DV * 8], float scale, const Chunks<T>& ctx,
                  int ch0, int chunks) {
  __m512 s[1][C];
  if constexpr (Dot) {
    score_chunks_dot<1, C, DV>(qp, ctx, ch0, chunks, s);
  } else {
    score_chunks<1, C, DV>(&q, ctx, ch0, chunks, s);
  }
  alignas(64) float p[C][kChunk];
  alignas(64) uint16_t pb[C][kChunk];
  float correction[C];
  if constexpr (C == 1) {
    correction[0] = softmax_update(q, s[0][0], ch0 * kChunk, scale, p[0]);
  } else {
    softmax_chunks<C>(q, s, ch0, scale, p, correction);
  }
  round_weights<T, Dot>(p, pb, C);
  __m512 acc[1][DV];
  load_acc(&q, acc);
  for (int c = 0; c < C; ++c) {
    if constexpr (Dot) {
      add_chunk_values_dot<1, DV>(acc, pb + c, correction + c, ctx.v[ch0 + c]);
    } else {
      add_chunk_values<1, DV>(acc, p + c, correction + c, ctx.v[ch0 + c],
                              value_scales(ctx, ch0 + c));
    }
  }
  store_acc(&q, acc);
}

// Chunks [ch, chunks) in strips of C, then what is left in strips of C / 2, C / 4, ...
template <int C, int DV, typename T, bool Dot>
void attend_range(QueryState& q, const uint32_t (*qp)[DV * 8], float scale, const Chunks<T>& ctx,
                  int ch, int chunks) {
  for (; ch + C <= chunks; ch += C) attend_strip<C, DV, T, Dot>(q, qp, scale, ctx, ch, chunks);
  if constexpr (C > 1) {
    if (ch < chunks) attend_range<C / 2, DV, T, Dot>(q, qp, scale, ctx, ch, chunks);
  }
}

// One query over its chunks, 8 at a time.
template <int DV, typename T, bool Dot>
void attend_one(QueryState& q, float scale, const Chunks<T>& ctx) {
  alignas(64) uint32_t qp[1][DV * 8];
  if constexpr (Dot) query_pairs<1, DV>(&q, qp);
  attend_range<8, DV, T, Dot>(q, qp, scale, ctx, 0, q.pos / kChunk + 1);
}

template <int DV, typename T, bool Dot>
void attend_all(QueryState* qs, int nq, float scale, const Chunks<T>& ctx) {
  int i = 0;
  for (; i + 8 <= nq; i += 8) attend_phased<8, DV, T, Dot>(qs + i, scale, ctx);
  if (nq - i >= 4) {
    attend_phased<4, DV, T, Dot>(qs + i, scale, ctx);
    i += 4;
  }
  if (nq - i >= 2) {
    attend_phased<2, DV, T, Dot>(qs + i, scale, ctx);
    i += 2;
  }
  if (nq - i >= 1) attend_one<DV, T, Dot>(qs[i], scale, ctx);
}

template <typename T, bool Dot>
void attend_any(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx) {
  switch (D) {
    case 16:
      return attend_all<1, T, Dot>(qs, nq, scale, ctx);
    case 32:
      return attend_all<2, T, Dot>(qs, nq, scale, ctx);
    case 64:
      return attend_all<4, T, Dot>(qs, nq, scale, ctx);
    case 128:
      return attend_all<8, T, Dot>(qs, nq, scale, ctx);
    default:
      attend_queries_portable(qs, nq, D, scale, ctx);
  }
}

}  // namespace

bool avx512_attention_handles(int D) {
  return D == 16 || D == 32 || D == 64 || D == 128;
}

void round_queries_avx512(const float* q, int n, float* out) {
  for (int i = 0; i < n; i += 16) {
    const auto lanes = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(out + i, lanes,
                          bf16_flushed_widened(_mm512_maskz_loadu_ps(lanes, q + i)));
  }
}

template <typename T>
void attend_queries_avx512(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx) {
  attend_any<T, false>(qs, nq, D, scale, ctx);
}

void attend_queries_avx512_dot(QueryState* qs, int nq, int D, float scale,
                               const Chunks<uint16_t>& ctx) {
  attend_any<uint16_t, true>(qs, nq, D, scale, ctx);
}

template void attend_queries_avx512(QueryState*, int, int, float, const Chunks<float>&);
template void attend_queries_avx512(QueryState*, int, int, float, const Chunks<uint16_t>&);
template void attend_queries_avx512(QueryState*, int, int, float, const Chunks<uint8_t>&);
template void attend_queries_avx512(QueryState*, int, int, float, const Chunks<int8_t>&);

}  // namespace pagedllm::cpu::attention
