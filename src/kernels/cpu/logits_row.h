// Whole-vocabulary passes for the sampler: a Qwen2 logits row has 151,936 entries, and the
// sampler sweeps it a few times per token. Each pass is one vectorized loop (AVX-512 or AVX2
// when the CPU has it), and every path gives the same bits: exp is exp_nonpositive op for op,
// and sums are kept in 16 lanes (lane j holds the elements i = j mod 16) within blocks of
// kExpBlock elements, added lane by lane into a double per block.
#pragma once

#include <cstdint>

namespace pagedllm::cpu {

inline constexpr int64_t kExpBlock = 1024;

// The largest value of x[0, n); -infinity when n is 0.
float row_max(const float* x, int64_t n);

// out[i] = exp(x[i] - shift) for a shift no smaller than any x[i], but exactly 0 where
// x[i] - shift < -87 (below float's normal range), so that a masked -infinity logit keeps
// probability 0. Returns the sum; block_sums (when not null, ceil(n / kExpBlock) entries) gets
// each block's sum, which lets a draw find its block before scanning elements.
double exp_shifted(const float* x, int64_t n, float shift, float* out, double* block_sums);

// x[i] /= d for i in [0, n): the sampler's temperature. Division is correctly rounded at every
// vector width, so every path gives the bits of the plain loop.
void divide_row(float* x, int64_t n, float d);

// The first index i in [0, n) with x[i] > t, or n when there is none.
int64_t first_above(const float* x, int64_t n, float t);

// Writes the indices i in [0, n) with x[i] > t to out, in order; returns how many. out needs
// room for n + 16 entries: the vector paths store whole registers.
int64_t collect_above(const float* x, int64_t n, float t, int32_t* out);

// Closes block b of exp_shifted: its 16 lane sums added in lane order into a double, recorded
// in block_sums (when not null) and added to total. Shared so that every path adds alike.
inline void close_block(const float (&lanes)[16], int64_t b, double* block_sums, double& total) {
  double block = 0.0;
  for (float l : lanes) block += l;
  if (block_sums) block_sums[b] = block;
  total += block;
}

// The per-ISA forms, called by the functions above after the runtime check.
float row_max_avx2(const float* x, int64_t n);
void divide_row_avx2(float* x, int64_t n, float d);
double exp_shifted_avx2(const float* x, int64_t n, float shift, float* out, double* block_sums);
int64_t first_above_avx2(const float* x, int64_t n, float t);
int64_t collect_above_avx2(const float* x, int64_t n, float t, int32_t* out);
float row_max_avx512(const float* x, int64_t n);
void divide_row_avx512(float* x, int64_t n, float d);
double exp_shifted_avx512(const float* x, int64_t n, float shift, float* out, double* block_sums);
int64_t first_above_avx512(const float* x, int64_t n, float t);
int64_t collect_above_avx512(const float* x, int64_t n, float t, int32_t* out);

}  // namespace pagedllm::cpu
