// The arithmetic of paged attention, shared by its ISA paths: queries against a context that
// paged_attention.cpp has located chunk by chunk. Call only with tiles laid out as below.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/exp_nonpositive.h"

namespace pagedllm::cpu::attention {

// Context positions per chunk. Chunk c covers positions 16c..16c+15. Its K tile holds K[d][o]
// (16 positions of one d side by side) and its V tile V[o][d]; a tile is either in the cache
// itself (a block of the CPU layout holds whole chunks) or a dense copy.
constexpr int kChunk = 16;

// Where each chunk's tiles are, for T = float, uint16_t (bf16), uint8_t (fp8 E4M3) or int8_t
// (q8_0 codes) elements.
template <typename T>
struct Chunks {
  const T* const* k;  // [chunks]: K[d][o] at k[c][d * ldk + o]
  const T* const* v;  // [chunks]: V[o][d] at v[c][o * D + d]
  int ldk;
  // q8_0 only (null otherwise): chunk c's f16 scales, K[d][o]'s at ks[c][(d / 32) * ldk + o] and
  // V[o][d]'s at vs[c][o * G + d / 32] (G = D / 32 rounded up). An element is its code times its
  // scale, which is exact in f32 (7-bit code, 11-bit scale), so every path computes with the
  // same values.
  const uint16_t* const* ks;
  const uint16_t* const* vs;
};

// q8_0: codes share a scale per this many elements of one position's head vector.
constexpr int kQ8Group = 32;
template <typename T>
constexpr bool kIsQ8 = std::is_same_v<T, int8_t>;
template <typename T>
constexpr bool kIsBf16 = std::is_same_v<T, uint16_t>;

// The index of the i-th product of a bf16 pair order (1, 0, 3, 2, ...), i itself for the other
// types. For an odd count n the last element comes alone: n - 1 is taken at i = n.
template <typename T>
constexpr int product_order(int i) {
  return kIsBf16<T> ? i ^ 1 : i;
}

// Chunk c's q8_0 value scales, or null for the other types.
template <typename T>
inline const uint16_t* value_scales(const Chunks<T>& ctx, int c) {
  return ctx.vs ? ctx.vs[c] : nullptr;
}

// One query head of one token against its context 0..pos, with its online-softmax state.
struct QueryState {
  const float* q;
  int pos;
  float running_max;
  float running_sum;
  float* acc;  // [D], unnormalized output
};

// The order every path follows, per query and per chunk in order, so that all paths give the
// same bits and a query's result never depends on the queries computed with it:
//   s[o]  = fma over d = 0..D-1 of q[d] * K[d][o], from 0
//   s[o]  = s[o] * scale, or -inf where 16c + o > pos
//   m'    = max(m, max over o of s[o]);  corr = exp(m - m')
//   p[o]  = exp(s[o] - m'), or 0 where masked;  sum = fma(sum, corr, tree_sum(p))
//   acc   = acc * corr, then acc = fma(p[o], V[o], acc) for o = 0..15
// A chunk wholly past pos is then an exact no-op (corr = exp(0) = 1, p = 0), so a kernel may
// run a query over chunks beyond its own context (up to the sign of an exact zero in acc).
//
// A bf16 cache (T = uint16_t) takes the products in the order of AVX512-BF16's vdpbf16ps, as
// llama.cpp's bf16 and f16 caches take them in f16: where the CPU has it, one instruction
// multiplies a pair of elements for 16 lanes, twice an f32 FMA's work, with no widening.
//   q[d] and p[o] are rounded to bf16 as bf16_flushed() does (the caller rounds q with
//   round_queries_* for the kernels that take QueryState.q rounded, all but the _dot form,
//   which converts q itself; every kernel rounds its p);
//   s[o]  = from 0, per pair d = 2j, 2j + 1: fma(q[2j + 1], K[2j + 1][o], s), then
//           fma(q[2j], K[2j][o], s)
//   acc   = acc * corr, then per pair o = 2j, 2j + 1: fma(p[2j + 1], V[2j + 1], acc), then
//           fma(p[2j], V[2j], acc)
// and the sum from the unrounded p. Every operation of the call flushes denormal inputs and
// results to zero, as vdpbf16ps does (paged_attention.cpp sets MXCSR's FTZ and DAZ for it).

// Sum of 16 values by halves: (o, o + 8), then (o, o + 4), (o, o + 2), (o, o + 1).
static inline float tree_sum16(float* v) {
  for (int w = kChunk / 2; w >= 1; w /= 2) {
    for (int o = 0; o < w; ++o) v[o] += v[o + w];
  }
  return v[0];
}

// Every chunk that a call's queries reach (0..max pos / 16) must exist and hold finite values:
// chunks a query does not see are run as the no-ops above by the grouped kernels.

// n values of q rounded to bf16 (bf16_flushed) and widened back into out, per path.
void round_queries_portable(const float* q, int n, float* out);
void round_queries_avx2(const float* q, int n, float* out);
void round_queries_avx512(const float* q, int n, float* out);

// Runs each of the nq queries over its chunks 0..pos/16, one query at a time.
template <typename T>
void attend_queries_portable(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx);

// The AVX-512 path: groups of up to 8 queries share each K and V load. Call only when the CPU
// has AVX-512F and avx512_attention_handles(D); the _dot form (bf16 caches) only when it also
// has AVX512-BF16.
bool avx512_attention_handles(int D);
template <typename T>
void attend_queries_avx512(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx);
void attend_queries_avx512_dot(QueryState* qs, int nq, int D, float scale,
                               const Chunks<uint16_t>& ctx);

// The AVX2 path: groups of up to 4 queries share each K and V load. Call only when the CPU has
// AVX2 and FMA and avx2_attention_handles(D).
bool avx2_attention_handles(int D);
template <typename T>
void attend_queries_avx2(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx);

}  // namespace pagedllm::cpu::attention
