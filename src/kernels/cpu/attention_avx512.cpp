// AVX-512 attention over a context's chunks, in the exact order of attention_tile.h.
//
// Why groups: one query's score for a chunk is a chain of D dependent FMAs, and the FMA units
// need about 8 independent chains to stay busy. So a kernel call scores NQ queries x C chunks
// (NQ * C = 8) at once: prefill takes 8 queries per chunk, a decode step one query over 8
// chunks (fewer where fewer are left), and every K and V vector loaded is used by all the queries
// of the group.
//
// GCC 12's AVX-512 headers seed masked builtins with _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports at every use (GCC bug 105593); nothing here reads an
// undefined value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <limits>

#include "kernels/cpu/attention_tile.h"

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

// acc = acc * correction + sum over o of p[o] * V[o] for QB queries, V loaded once per row.
template <int QB, int DV, typename T>
[[gnu::always_inline]] inline void accumulate_values(QueryState* qs, const float (*p)[kChunk],
                                                     const float* correction, const T* vt) {
  constexpr int D = DV * 16;
  __m512 acc[QB][DV];
  for (int i = 0; i < QB; ++i) {
    const __m512 c = _mm512_set1_ps(correction[i]);
    for (int v = 0; v < DV; ++v) acc[i][v] = _mm512_mul_ps(_mm512_loadu_ps(qs[i].acc + 16 * v), c);
  }
  for (int o = 0; o < kChunk; ++o) {
    __m512 row[DV];
    for (int v = 0; v < DV; ++v) row[v] = load16(vt + o * D + 16 * v);
    for (int i = 0; i < QB; ++i) {
      const __m512 w = _mm512_set1_ps(p[i][o]);
      for (int v = 0; v < DV; ++v) acc[i][v] = _mm512_fmadd_ps(w, row[v], acc[i][v]);
    }
  }
  for (int i = 0; i < QB; ++i) {
    for (int v = 0; v < DV; ++v) _mm512_storeu_ps(qs[i].acc + 16 * v, acc[i][v]);
  }
}

// NQ queries over chunks ch0 .. ch0 + C - 1 (NQ * C <= 8 score chains).
template <int NQ, int C, int DV, typename T>
void attend_strip(QueryState* qs, float scale, const Chunks<T>& ctx, int ch0) {
  constexpr int D = DV * 16;
  __m512 s[NQ][C];
  for (int i = 0; i < NQ; ++i) {
    for (int c = 0; c < C; ++c) s[i][c] = _mm512_setzero_ps();
  }
  const T* kt[C];
  for (int c = 0; c < C; ++c) kt[c] = ctx.k[ch0 + c];
  for (int d = 0; d < D; ++d) {
    __m512 k[C];
    for (int c = 0; c < C; ++c) k[c] = load16(kt[c] + static_cast<size_t>(d) * ctx.ldk);
    for (int i = 0; i < NQ; ++i) {
      const __m512 q = _mm512_set1_ps(qs[i].q[d]);
      for (int c = 0; c < C; ++c) s[i][c] = _mm512_fmadd_ps(q, k[c], s[i][c]);
    }
  }
  constexpr int QB = NQ < 16 / DV ? NQ : 16 / DV;
  for (int c = 0; c < C; ++c) {
    alignas(64) float p[NQ][kChunk];
    float correction[NQ];
    for (int i = 0; i < NQ; ++i)
      correction[i] = softmax_update(qs[i], s[i][c], (ch0 + c) * kChunk, scale, p[i]);
    for (int i = 0; i < NQ; i += QB)
      accumulate_values<QB, DV>(qs + i, p + i, correction + i, ctx.v[ch0 + c]);
  }
}

// Chunks [ch, chunks) in strips of C, then what is left in strips of C / 2, C / 4, ...
template <int NQ, int C, int DV, typename T>
void attend_range(QueryState* qs, float scale, const Chunks<T>& ctx, int ch, int chunks) {
  for (; ch + C <= chunks; ch += C) attend_strip<NQ, C, DV>(qs, scale, ctx, ch);
  if constexpr (C > 1) {
    if (ch < chunks) attend_range<NQ, C / 2, DV>(qs, scale, ctx, ch, chunks);
  }
}

// NQ queries over the chunks the furthest of them reaches.
template <int NQ, int C, int DV, typename T>
void attend_group(QueryState* qs, float scale, const Chunks<T>& ctx) {
  int chunks = 0;
  for (int i = 0; i < NQ; ++i) chunks = std::max(chunks, qs[i].pos / kChunk + 1);
  attend_range<NQ, C, DV>(qs, scale, ctx, 0, chunks);
}

template <int DV, typename T>
void attend_all(QueryState* qs, int nq, float scale, const Chunks<T>& ctx) {
  int i = 0;
  for (; i + 8 <= nq; i += 8) attend_group<8, 1, DV>(qs + i, scale, ctx);
  if (nq - i >= 4) {
    attend_group<4, 2, DV>(qs + i, scale, ctx);
    i += 4;
  }
  if (nq - i >= 2) {
    attend_group<2, 4, DV>(qs + i, scale, ctx);
    i += 2;
  }
  if (nq - i >= 1) attend_group<1, 8, DV>(qs + i, scale, ctx);
}

}  // namespace

bool avx512_attention_handles(int D) {
  return D == 16 || D == 32 || D == 64 || D == 128;
}

template <typename T>
void attend_queries_avx512(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx) {
  switch (D) {
    case 16:
      return attend_all<1>(qs, nq, scale, ctx);
    case 32:
      return attend_all<2>(qs, nq, scale, ctx);
    case 64:
      return attend_all<4>(qs, nq, scale, ctx);
    case 128:
      return attend_all<8>(qs, nq, scale, ctx);
    default:
      attend_queries_portable(qs, nq, D, scale, ctx);
  }
}

template void attend_queries_avx512(QueryState*, int, int, float, const Chunks<float>&);
template void attend_queries_avx512(QueryState*, int, int, float, const Chunks<uint16_t>&);

}  // namespace pagedllm::cpu::attention
