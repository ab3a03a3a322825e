// Block-quantized formats (tensor.h's Q8_0 to IQ4_XS) in one decoded form: a row is a run of
// sub-blocks, each with integer codes q, a scale s and a min m, and a weight is exactly
// s * q - m, in that float order. That is llama.cpp's reference dequantization for every format
// (m = 0 where a format has no min, and x - 0 is x; Q4_1 and Q5_1 add their f16 min, which is
// m negated; IQ4_NL and IQ4_XS's codes are their table's levels), so the GEMM kernels, which
// work on the decoded form, stay bit-identical to dequantize_row().
#pragma once

#include <cstdint>

#include "format/tensor.h"

namespace pagedllm {

// IQ4_NL and IQ4_XS's levels: a 4-bit index i stands for the code kIq4Levels[i].
inline constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
// The index of the level nearest v.
int nearest_iq4_level(float v);
// The value of largest magnitude among x[0..n), with its sign (the encoders' symmetric fits).
float extreme_value(const float* x, int n);

// Elements per sub-block: 32, or 16 for Q2_K, Q3_K and Q6_K.
int sub_block_elements(DType dtype);
// Whether any sub-block can have a non-zero min (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K).
bool has_mins(DType dtype);
// The codes' range: Q8_0, IQ4_NL and IQ4_XS [-128, 127], Q4_0 [-8, 7], Q5_0 [-16, 15], Q4_1 and
// Q4_K [0, 15], Q5_1 and Q5_K [0, 31], Q2_K [0, 3], Q3_K [-4, 3], Q6_K [-32, 31].
int min_code(DType dtype);
int max_code(DType dtype);

// A block's sub-block scales and mins as factors: scale b = f16(d) * scale[b] and min b =
// f16(dmin) * min[b], both products exact in f32 (11 by at most 8 significant bits). The
// formats of 32-element blocks have one sub-block with scale 1 (and min 1 over dmin = the
// block's min negated, for Q4_1 and Q5_1).
struct BlockFactors {
  uint16_t d = 0, dmin = 0;  // f16 bits
  int sub_blocks = 0;
  int8_t scale[16] = {};
  uint8_t min[16] = {};
};
BlockFactors block_factors(DType dtype, const uint8_t* block);

// Decodes n elements (a multiple of block_elements(dtype)) of one row: n codes, and
// n / sub_block_elements(dtype) scales and mins.
void unpack_blocks(DType dtype, const uint8_t* src, int64_t n, int8_t* codes, float* scales,
                   float* mins);

// Encodes n floats into row_bytes(dtype, n) bytes: llama.cpp's rounding for Q8_0, Q4_0 and
// Q5_0; for the others a plain fit per block or sub-block (min/max for the formats with mins,
// the extreme value for the others; k_quants.h), not llama.cpp's iterative search, which only
// matters for real weights.
void quantize_blocks(DType dtype, const float* src, uint8_t* dst, int64_t n);

}  // namespace pagedllm
