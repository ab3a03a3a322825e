// AVX2 attention over a context's chunks, in the exact order of attention_tile.h (compiled with
// -mavx2 -mfma; called only when the CPU has them).
//
// As on AVX-512, one query's score for a chunk is a chain of D dependent FMAs per lane, and the
// two FMA units need at least 8 independent chains: a chunk of 16 positions is two 8-lane
// vectors, so a kernel call scores NQ queries x C chunks with NQ * C >= 4 (prefill: 6 queries per
// chunk, 12 chains; a decode step: one query over 4 chunks), every K vector loaded serving all NQ
// queries. The value products run over D in slices for up to 6 queries at once (6 x 2 vectors in
// prefill, 1 x 4 in decode), so that the accumulators stay in the 16 ymm registers and each V
// vector loaded and widened serves every query of the slice: with bf16 values the widening shift
// takes a port the FMAs use, and 4 queries of 2 vectors rather than 2 of 4 halved it
// (BM_PagedAttention ctx 512, 512 queries, bf16, on the AVX2 paths, alternating: 12.6-13.1 ms
// -> 11.8-12.1).
//
// A bf16 cache's 16 elements widen as their even and odd halves (widen_split: three shifts
// where two in-order halves take two shuffles and two shifts): a K row's halves are then the
// chunk's even and odd positions (MaskedChunk<true>, weight_index) and a V row's the even and
// odd elements, so each query's accumulator is kept split until attend_all puts it back in
// order (BM_PagedAttention on the AVX2 path, one thread, three ABBA rounds, medians: ctx 4096,
// 12 kv heads 314 -> 295 us, 8 kv heads of 4 queries 542 -> 526; 512 queries unchanged).
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/bf16_rounding.h"

namespace pagedllm::cpu::attention {

namespace {

// Eight consecutive elements widened to f32, exactly as dequant.h's conversions give them.
inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
// 16 bf16 widened as two halves: the even elements and the odd ones (lane l: elements 2l and
// 2l + 1), three shifts where widening them in order takes two shuffles and two shifts. (A
// mask for the odd ones would take a 17th register from the 6-query tile, which then spilled.)
inline void widen_split(const uint16_t* p, __m256& even, __m256& odd) {
  const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  even = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));
  odd = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(pairs, 16), 16));
}

inline __m256 load8(const uint8_t* p) {  // fp8 E4M3: magnitude bits into an f16, times 2^8
  const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m128i sign = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8);
  const __m128i magnitude = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7F)), 7);
  return _mm256_mul_ps(_mm256_cvtph_ps(_mm_or_si128(sign, magnitude)), _mm256_set1_ps(256.0f));
}

inline __m256 load8(const int8_t* p) {  // q8_0 codes; the caller applies their scales
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline __m256 load8_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 16 consecutive elements as two vectors: in order, or split for bf16 (widen_split).
template <typename T>
inline void load16(const T* p, __m256& first, __m256& second) {
  if constexpr (kIsBf16<T>) {
    widen_split(p, first, second);
  } else {
    first = load8(p);
    second = load8(p + 8);
  }
}

// A chunk's two halves of 8 lanes hold positions 0-7 and 8-15, or, split (a bf16 cache: see
// widen_split), the even positions and the odd ones: lane l of half h is position 2l + h. A
// chunk's weights are stored in p in the same order; weight_index gives where position o is.
template <bool Split>
constexpr int weight_index(int o) {
  return Split ? (o % 2) * 8 + o / 2 : o;
}

// A chunk's scores scaled, and -inf past the query's position (last: pos - the chunk's first).
template <bool Split>
struct MaskedChunk {
  __m256 valid[2], scaled[2];

  void mask(const __m256 (&s)[2], int last, float scale) {
    const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    for (int h = 0; h < 2; ++h) {
      const __m256i lane =
          Split ? _mm256_setr_epi32(h, 2 + h, 4 + h, 6 + h, 8 + h, 10 + h, 12 + h, 14 + h)
                : _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                   _mm256_set1_epi32(8 * h));
      // lane <= last, as not (lane > last).
      valid[h] = _mm256_castsi256_ps(_mm256_xor_si256(
          _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(last)), _mm256_set1_epi32(-1)));
      scaled[h] = _mm256_blendv_ps(neg_inf, _mm256_mul_ps(s[h], _mm256_set1_ps(scale)), valid[h]);
    }
  }
  __m256 halves_max() const { return _mm256_max_ps(scaled[0], scaled[1]); }
  // The 16 weights exp(s - max), 0 where masked, into p; returns lanes o: p[o] + p[o + 8].
  __m256 weights(float max, float* p) const {
    __m256 e[2];
    for (int h = 0; h < 2; ++h) {
      e[h] = _mm256_and_ps(valid[h],
                           cpu::exp_nonpositive(_mm256_sub_ps(scaled[h], _mm256_set1_ps(max))));
      _mm256_store_ps(p + 8 * h, e[h]);
    }
    if constexpr (!Split) return _mm256_add_ps(e[0], e[1]);
    // Lanes j of (even | odd) halves: p[2j] + p[2j + 8] and p[2j + 1] + p[2j + 9], then in
    // position order.
    const __m256 sums = _mm256_add_ps(_mm256_permute2f128_ps(e[0], e[1], 0x20),
                                      _mm256_permute2f128_ps(e[0], e[1], 0x31));
    return _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
};

// attention_tile.h's tree_sum16 of a chunk, from its pair sums (lanes o: p[o] + p[o + 8]).
inline float tree_sum16(__m256 pair_sums) {
  const __m128 b =
      _mm_add_ps(_mm256_castps256_ps128(pair_sums), _mm256_extractf128_ps(pair_sums, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

inline float reduce_max(__m256 a) {
  __m128 b = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_max_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_max_ss(b, _mm_shuffle_ps(b, b, 1)));
}

// Softmax bookkeeping of one query for one chunk (s: its two halves): p (16 weights) and the
// correction of acc.
template <bool Split>
inline float softmax_update(QueryState& qs, const __m256 (&s)[2], int first, float scale,
                            float* p) {
  MaskedChunk<Split> chunk;
  chunk.mask(s, qs.pos - first, scale);
  const float new_max = std::max(qs.running_max, reduce_max(chunk.halves_max()));
  const float correction = cpu::exp_nonpositive(qs.running_max - new_max);
  qs.running_sum = std::fma(qs.running_sum, correction, tree_sum16(chunk.weights(new_max, p)));
  qs.running_max = new_max;
  return correction;
}

// The softmax of up to 8 (query, chunk) pairs at once, with softmax_update's bits: their maxima
// and sums are reduced side by side in 8 lanes (the sums in tree_sum16's pairing: lanes o and
// o + 8, then o + 4, o + 2, o + 1) and their corrections are one vector exp. One pair at a time,
// each with a scalar exp, the softmax took about as long as the chunk's score products
// (BM_PagedAttention on the AVX2 paths: see KERNELS.md).

// Lane i: the maximum of v[i]'s 8 lanes (max is exact in any order).
inline __m256 lane_maxima(const __m256 (&v)[8]) {
  __m256 quads[2];  // vectors 0-3 and 4-7: their lanes 0-3 in the low half, 4-7 in the high
  for (int g = 0; g < 2; ++g) {
    const __m256* h = v + 4 * g;
    const __m256 m01 =
        _mm256_max_ps(_mm256_unpacklo_ps(h[0], h[1]), _mm256_unpackhi_ps(h[0], h[1]));
    const __m256 m23 =
        _mm256_max_ps(_mm256_unpacklo_ps(h[2], h[3]), _mm256_unpackhi_ps(h[2], h[3]));
    quads[g] = _mm256_max_ps(_mm256_shuffle_ps(m01, m23, 0x44), _mm256_shuffle_ps(m01, m23, 0xEE));
  }
  return _mm256_max_ps(_mm256_permute2f128_ps(quads[0], quads[1], 0x20),
                       _mm256_permute2f128_ps(quads[0], quads[1], 0x31));
}

// Lane i: tree_sum16 of the chunk whose lanes o hold p[o] + p[o + 8] in pair_sums[i].
inline __m256 lane_tree_sums(const __m256 (&pair_sums)[8]) {
  // Lanes o + 4: vectors 2j and 2j + 1, four lanes each.
  __m256 b[4];
  for (int j = 0; j < 4; ++j) {
    const __m256 x = pair_sums[2 * j], y = pair_sums[2 * j + 1];
    b[j] = _mm256_add_ps(_mm256_permute2f128_ps(x, y, 0x20), _mm256_permute2f128_ps(x, y, 0x31));
  }
  // Lanes o + 2: (v0 o=0,1, v2 o=0,1 | v1 o=0,1, v3 o=0,1), the same for v4-v7.
  const __m256 c0 =
      _mm256_add_ps(_mm256_shuffle_ps(b[0], b[1], 0x44), _mm256_shuffle_ps(b[0], b[1], 0xEE));
  const __m256 c1 =
      _mm256_add_ps(_mm256_shuffle_ps(b[2], b[3], 0x44), _mm256_shuffle_ps(b[2], b[3], 0xEE));
  // Lanes o + 1: (v0, v2, v4, v6 | v1, v3, v5, v7), then in order.
  const __m256 d = _mm256_add_ps(_mm256_shuffle_ps(c0, c1, 0x88), _mm256_shuffle_ps(c0, c1, 0xDD));
  const __m128 even = _mm256_castps256_ps128(d), odd = _mm256_extractf128_ps(d, 1);
  return _mm256_set_m128(_mm_unpackhi_ps(even, odd), _mm_unpacklo_ps(even, odd));
}

// std::max(a, b) lane by lane: a unless a < b.
inline __m256 max_as_std(__m256 a, __m256 b) {
  return _mm256_blendv_ps(a, b, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
}

// NQ (2 to 8) queries, one chunk each (s[i]: query i's two halves).
template <int NQ, bool Split>
[[gnu::always_inline]] inline void softmax_update_queries(QueryState* qs,
                                                          const __m256 (&s)[NQ][1][2], int first,
                                                          float scale, float (*p)[kChunk],
                                                          float* correction) {
  static_assert(NQ >= 2 && NQ <= 8);
  MaskedChunk<Split> chunk[NQ];
  __m256 halves_max[8], pair_sums[8];
  alignas(32) float old_max[8] = {}, old_sum[8] = {}, maxima[8], sums[8], corrections[8];
  for (int i = 0; i < 8; ++i) halves_max[i] = pair_sums[i] = _mm256_setzero_ps();
  for (int i = 0; i < NQ; ++i) {
    chunk[i].mask(s[i][0], qs[i].pos - first, scale);
    halves_max[i] = chunk[i].halves_max();
    old_max[i] = qs[i].running_max;
    old_sum[i] = qs[i].running_sum;
  }
  const __m256 before = _mm256_load_ps(old_max);
  const __m256 new_max = max_as_std(before, lane_maxima(halves_max));
  const __m256 corr = cpu::exp_nonpositive(_mm256_sub_ps(before, new_max));
  _mm256_store_ps(maxima, new_max);
  for (int i = 0; i < NQ; ++i) pair_sums[i] = chunk[i].weights(maxima[i], p[i]);
  _mm256_store_ps(sums, _mm256_fmadd_ps(_mm256_load_ps(old_sum), corr, lane_tree_sums(pair_sums)));
  _mm256_store_ps(corrections, corr);
  for (int i = 0; i < NQ; ++i) {
    qs[i].running_sum = sums[i];
    qs[i].running_max = maxima[i];
    correction[i] = corrections[i];
  }
}

// One query, C (2 to 8) chunks from chunk ch0 (s[0][c]: chunk c's two halves). The running
// maximum is a chain over the chunks, but a cheap one; the exps and sums run side by side.
template <int C, bool Split>
[[gnu::always_inline]] inline void softmax_update_chunks(QueryState& q, const __m256 (&s)[1][C][2],
                                                         int ch0, float scale, float (*p)[kChunk],
                                                         float* correction) {
  static_assert(C >= 2 && C <= 8);
  MaskedChunk<Split> chunk[C];
  __m256 halves_max[8], pair_sums[8];
  alignas(32) float chunk_max[8], before[8] = {}, maxima[8] = {}, sums[8], corrections[8];
  for (int c = 0; c < 8; ++c) halves_max[c] = pair_sums[c] = _mm256_setzero_ps();
  for (int c = 0; c < C; ++c) {
    chunk[c].mask(s[0][c], q.pos - (ch0 + c) * kChunk, scale);
    halves_max[c] = chunk[c].halves_max();
  }
  _mm256_store_ps(chunk_max, lane_maxima(halves_max));
  float running = q.running_max;
  for (int c = 0; c < C; ++c) {
    before[c] = running;
    running = std::max(running, chunk_max[c]);
    maxima[c] = running;
  }
  _mm256_store_ps(corrections, cpu::exp_nonpositive(
                                   _mm256_sub_ps(_mm256_load_ps(before), _mm256_load_ps(maxima))));
  for (int c = 0; c < C; ++c) pair_sums[c] = chunk[c].weights(maxima[c], p[c]);
  _mm256_store_ps(sums, lane_tree_sums(pair_sums));
  float sum = q.running_sum;
  for (int c = 0; c < C; ++c) {
    sum = std::fma(sum, corrections[c], sums[c]);
    correction[c] = corrections[c];
  }
  q.running_sum = sum;
  q.running_max = running;
}

// The scores of NQ queries for chunks ch0 .. ch0 + C - 1: s[i][c] = fma over d of
// q_i[d] * K[d][o], from 0, for the chunk's two halves.
//
// A batch's decode reads each context once, from DRAM, and a chunk's tiles sit in whatever block
// holds them, where the hardware prefetchers stop. So each row step also fetches a line of the
// strip's V tiles (needed after the softmax) and of the next strip's K tiles (chunks ch0 + C on,
// up to `chunks`): a tile's D steps cover its lines. llama-110m on the AVX2 paths, alternating:
// q8_0 tg64 after 4096 tokens 96.8-97.2 -> 113.9-119.5 tok/s; bf16 batched 32 x (128 + 128)
// attention 19 -> 13 % of the decode steps (perf); pp512 unchanged. In cache (BM_PagedAttention
// ctx 250) the fetches cost about 8 %.
template <int NQ, int C, int D, typename T>
[[gnu::always_inline]] inline void score_chunks(const QueryState* qs, const Chunks<T>& ctx, int ch0,
                                                int chunks, __m256 (&s)[NQ][C][2]) {
  for (int i = 0; i < NQ; ++i) {
    for (int c = 0; c < C; ++c) s[i][c][0] = s[i][c][1] = _mm256_setzero_ps();
  }
  const T* kt[C];
  const T* next_k[C];
  const T* vt[C];
  for (int c = 0; c < C; ++c) {
    kt[c] = ctx.k[ch0 + c];
    next_k[c] = ctx.k[std::min(ch0 + C + c, chunks - 1)];
    vt[c] = ctx.v[ch0 + c];
  }
  // d in groups that share their q8_0 scales (the whole head for the other types).
  constexpr int kGroup = kIsQ8<T> && D >= kQ8Group ? kQ8Group : D;
  for (int d0 = 0; d0 < D; d0 += kGroup) {
    __m256 scale[C][2];
    if constexpr (kIsQ8<T>) {
      for (int c = 0; c < C; ++c) {
        const uint16_t* row = ctx.ks[ch0 + c] + static_cast<size_t>(d0 / kGroup) * ctx.ldk;
        scale[c][0] = load8_f16(row);
        scale[c][1] = load8_f16(row + 8);
      }
    }
    const auto row_step = [&](int d) {
      for (int c = 0; c < C; ++c) {
        const T* row = kt[c] + static_cast<size_t>(d) * ctx.ldk;
        _mm_prefetch(reinterpret_cast<const char*>(next_k[c] + static_cast<size_t>(d) * ctx.ldk),
                     _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(vt[c] + d * kChunk), _MM_HINT_T0);
        __m256 k0, k1;  // a bf16 cache's halves split (MaskedChunk)
        load16(row, k0, k1);
        if constexpr (kIsQ8<T>) {
          k0 = _mm256_mul_ps(k0, scale[c][0]);
          k1 = _mm256_mul_ps(k1, scale[c][1]);
        }
        for (int i = 0; i < NQ; ++i) {
          const __m256 q = _mm256_set1_ps(qs[i].q[d]);
          s[i][c][0] = _mm256_fmadd_ps(q, k0, s[i][c][0]);
          s[i][c][1] = _mm256_fmadd_ps(q, k1, s[i][c][1]);
        }
      }
    };
    // A bf16 cache's pairs, second row first, as straight code: indexing rows by d ^ 1 in one
    // loop cost 15 % of a decode step's attention (BM_PagedAttention ctx 4096, one thread).
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

// acc = acc * correction + sum over o of p[o] * V[o] for NQ queries and one chunk, over D in
// slices of S vectors for QB queries at a time (QB * S accumulators in registers). vs: a q8_0
// chunk's value scales, else null.
template <int NQ, int D, typename T>
[[gnu::always_inline]] inline void add_chunk_values(QueryState* qs, const float (*p)[kChunk],
                                                    const float* correction, const T* vt,
                                                    const uint16_t* vs) {
  constexpr int QB = NQ == 6 ? 6 : NQ < 4 ? NQ : 4;
  constexpr int S = QB == 6 ? 2 : std::min({D / 8, 4, 8 / QB});
  static_assert(S % 2 == 0, "load16 fills two vectors");
  for (int i0 = 0; i0 < NQ; i0 += QB) {
    for (int v0 = 0; v0 < D / 8; v0 += S) {
      __m256 acc[QB][S];
      for (int i = 0; i < QB; ++i) {
        const __m256 c = _mm256_set1_ps(correction[i0 + i]);
        for (int v = 0; v < S; ++v)
          acc[i][v] = _mm256_mul_ps(_mm256_loadu_ps(qs[i0 + i].acc + 8 * (v0 + v)), c);
      }
#pragma GCC unroll 16
      for (int j = 0; j < kChunk; ++j) {
        const int o = product_order<T>(j);
        __m256 row[S];  // a bf16 cache's split: each 16 elements as their even and odd halves
        for (int v = 0; v < S; v += 2) load16(vt + o * D + 8 * (v0 + v), row[v], row[v + 1]);
        if constexpr (kIsQ8<T>) {
          constexpr int kGroups = (D + kQ8Group - 1) / kQ8Group;
          for (int v = 0; v < S; ++v) {
            const float scale = _cvtsh_ss(vs[o * kGroups + 8 * (v0 + v) / kQ8Group]);  // F16C
            row[v] = _mm256_mul_ps(row[v], _mm256_set1_ps(scale));
          }
        }
        for (int i = 0; i < QB; ++i) {
          const __m256 w = _mm256_set1_ps(p[i0 + i][weight_index<kIsBf16<T>>(o)]);
          for (int v = 0; v < S; ++v) acc[i][v] = _mm256_fmadd_ps(w, row[v], acc[i][v]);
        }
      }
      for (int i = 0; i < QB; ++i) {
        for (int v = 0; v < S; ++v) _mm256_storeu_ps(qs[i0 + i].acc + 8 * (v0 + v), acc[i][v]);
      }
    }
  }
}

// A bf16 cache's weights rounded as its order takes them (attention_tile.h), in place.
template <typename T>
inline void round_weights(float (*p)[kChunk], int n) {
  if constexpr (kIsBf16<T>) {
    for (int i = 0; i < n; ++i) {
      for (int h = 0; h < kChunk; h += 8)
        _mm256_store_ps(p[i] + h, bf16_flushed_widened(_mm256_load_ps(p[i] + h)));
    }
  }
}

// NQ queries over chunks ch0 .. ch0 + C - 1.
template <int NQ, int C, int D, typename T>
void attend_strip(QueryState* qs, float scale, const Chunks<T>& ctx, int ch0, int chunks) {
  __m256 s[NQ][C][2];
  score_chunks<NQ, C, D>(qs, ctx, ch0, chunks, s);
  if constexpr (NQ == 1 && C >= 2) {
    alignas(32) float p[C][kChunk];
    float correction[C];
    softmax_update_chunks<C, kIsBf16<T>>(qs[0], s, ch0, scale, p, correction);
    round_weights<T>(p, C);
    for (int c = 0; c < C; ++c) {
      add_chunk_values<1, D>(qs, p + c, correction + c, ctx.v[ch0 + c], value_scales(ctx, ch0 + c));
    }
    return;
  }
  for (int c = 0; c < C; ++c) {
    alignas(32) float p[NQ][kChunk];
    float correction[NQ];
    if constexpr (NQ >= 2 && C == 1) {
      softmax_update_queries<NQ, kIsBf16<T>>(qs, s, ch0 * kChunk, scale, p, correction);
    } else {
      for (int i = 0; i < NQ; ++i)
        correction[i] = softmax_update<kIsBf16<T>>(qs[i], s[i][c], (ch0 + c) * kChunk, scale, p[i]);
    }
    round_weights<T>(p, NQ);
    add_chunk_values<NQ, D>(qs, p, correction, ctx.v[ch0 + c], value_scales(ctx, ch0 + c));
  }
}

// Chunks [ch, chunks) in strips of C, then what is left in strips of C / 2, C / 4, ...
template <int NQ, int C, int D, typename T>
void attend_range(QueryState* qs, float scale, const Chunks<T>& ctx, int ch, int chunks) {
  for (; ch + C <= chunks; ch += C) attend_strip<NQ, C, D>(qs, scale, ctx, ch, chunks);
  if constexpr (C > 1) {
    if (ch < chunks) attend_range<NQ, C / 2, D>(qs, scale, ctx, ch, chunks);
  }
}

// NQ queries over the chunks the furthest of them reaches (past a query's own position a chunk
// is an exact no-op for it, attention_tile.h).
template <int NQ, int C, int D, typename T>
void attend_group(QueryState* qs, float scale, const Chunks<T>& ctx) {
  int chunks = 0;
  for (int i = 0; i < NQ; ++i) chunks = std::max(chunks, qs[i].pos / kChunk + 1);
  attend_range<NQ, C, D>(qs, scale, ctx, 0, chunks);
}

// A bf16 cache's accumulators hold each 16 elements as their even and odd halves (load16):
// back in order for the caller.
inline void unsplit(float* acc, int D) {
  for (int b = 0; b < D; b += 16) {
    const __m256 even = _mm256_loadu_ps(acc + b), odd = _mm256_loadu_ps(acc + b + 8);
    const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
    _mm256_storeu_ps(acc + b, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(acc + b + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
  }
}

template <int D, typename T>
void attend_all(QueryState* qs, int nq, float scale, const Chunks<T>& ctx) {
  int i = 0;
  for (; i + 6 <= nq; i += 6) attend_group<6, 1, D>(qs + i, scale, ctx);
  for (; i + 4 <= nq; i += 4) attend_group<4, 1, D>(qs + i, scale, ctx);
  if (nq - i >= 2) {
    attend_group<2, 2, D>(qs + i, scale, ctx);
    i += 2;
  }
  if (nq - i >= 1) attend_group<1, 4, D>(qs + i, scale, ctx);
  if constexpr (kIsBf16<T>) {
    for (int j = 0; j < nq; ++j) unsplit(qs[j].acc, D);
  }
}

}  // namespace

void round_queries_avx2(const float* q, int n, float* out) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, bf16_flushed_widened(_mm256_loadu_ps(q + i)));
  for (; i < n; ++i) out[i] = bf16_flushed_widened(q[i]);
}

bool avx2_attention_handles(int D) {
  return D == 16 || D == 32 || D == 64 || D == 128;
}

template <typename T>
void attend_queries_avx2(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx) {
  switch (D) {
    case 16:
      return attend_all<16>(qs, nq, scale, ctx);
    case 32:
      return attend_all<32>(qs, nq, scale, ctx);
    case 64:
      return attend_all<64>(qs, nq, scale, ctx);
    case 128:
      return attend_all<128>(qs, nq, scale, ctx);
    default:
      attend_queries_portable(qs, nq, D, scale, ctx);
  }
}

template void attend_queries_avx2(QueryState*, int, int, float, const Chunks<float>&);
template void attend_queries_avx2(QueryState*, int, int, float, const Chunks<uint16_t>&);
template void attend_queries_avx2(QueryState*, int, int, float, const Chunks<uint8_t>&);
template void attend_queries_avx2(QueryState*, int, int, float, const Chunks<int8_t>&);

}  // namespace pagedllm::cpu::attention
