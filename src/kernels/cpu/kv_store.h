// Vector paths of reshape_and_cache: for a bf16 cache the rounding of dequant.h's f32_to_bf16
// (to nearest even, NaN quieted, denormals kept), 16 values at a time on AVX-512 and 8 on AVX2;
// for a q8_0 cache one group's scale and codes. Call the _avx512 forms only when the CPU has
// AVX-512 F/BW/VL and the _avx2 ones when it has AVX2 (paged_attention.cpp checks active_isa()).
#pragma once

#include <cstdint>

namespace pagedllm::cpu {

// n values of x rounded into out.
void round_to_bf16_avx512(const float* x, int n, uint16_t* out);

// The key rows of `count` tokens at consecutive offsets of one block: row d of the block at
// kd + d * ld gets token j's x[j * width + d] at column j, for d < D and j < count.
void store_key_rows_bf16_avx512(const float* x, int width, int count, int D, uint16_t* kd, int ld);

// One q8_0 group of size <= 32 values, as paged_attention.cpp's quantize_q8_0 makes it, op for op
// (max is exact in any order; NaN lanes lose against the running max and give code -127): its
// codes into codes[0, size), and its scale amax / 127 returned.
float quantize_q8_group_avx512(const float* x, int size, int8_t* codes);

// The same two bf16 stores on AVX2.
void round_to_bf16_avx2(const float* x, int n, uint16_t* out);
void store_key_rows_bf16_avx2(const float* x, int width, int count, int D, uint16_t* kd, int ld);

}  // namespace pagedllm::cpu
