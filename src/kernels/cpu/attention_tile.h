// The arithmetic of paged attention, shared by its ISA paths: queries against a context that
// paged_attention.cpp has gathered into dense tiles. Call only with tiles laid out as below.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace pagedllm::cpu::attention {

// Context positions per chunk. Chunk c covers positions 16c..16c+15: its K tile is [D][16]
// (one vector of 16 positions per d) and its V tile [16][D]; tiles of consecutive chunks follow
// each other, K tiles in one array and V tiles in another.
constexpr int kChunk = 16;
// The tiles are padded with zero chunks to a multiple of this, so a kernel may run a group of
// queries over whole strips of chunks.
constexpr int kChunkPad = 8;

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

// exp(x) for x <= 0 (softmax arguments): a Cephes-style range reduction and polynomial written
// without libm and without fused operations, so that the vector paths repeat it op for op.
// Internal linkage: each ISA's file compiles its own copy, so no linker can pick a wider one.
static inline float exp_nonpositive(float x) {
  x = std::max(x, -87.0f);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &p, 4);
  bits += static_cast<int32_t>(n) << 23;
  std::memcpy(&p, &bits, 4);
  return p;
}

// Sum of 16 values by halves: (o, o + 8), then (o, o + 4), (o, o + 2), (o, o + 1).
static inline float tree_sum16(float* v) {
  for (int w = kChunk / 2; w >= 1; w /= 2) {
    for (int o = 0; o < w; ++o) v[o] += v[o + w];
  }
  return v[0];
}

// Runs each of the nq queries over chunks 0..pos/16 of the tiles, one query at a time.
void attend_queries_portable(QueryState* qs, int nq, int D, float scale, const float* k_tiles,
                             const float* v_tiles);

// The AVX-512 path: groups of up to 8 queries share each K and V load. Call only when the CPU
// has AVX-512F and avx512_attention_handles(D).
bool avx512_attention_handles(int D);
void attend_queries_avx512(QueryState* qs, int nq, int D, float scale, const float* k_tiles,
                           const float* v_tiles);

}  // namespace pagedllm::cpu::attention
