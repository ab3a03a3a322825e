// Block-quantized formats (Q8_0, Q4_0 and the k-quants Q4_K, Q5_K, Q6_K) in one decoded form:
// a row is a run of sub-blocks, each with integer codes q, a scale s and a min m, and a weight
// is exactly s * q - m, in that float order. That is llama.cpp's reference dequantization for
// every format (m = 0 where a format has no min, and x - 0 is x), so the GEMM kernels, which
// work on the decoded form, stay bit-identical to dequantize_row().
#pragma once

#include <cstdint>

#include "format/tensor.h"

namespace pagedllm {

// Elements per sub-block: 32, or 16 for Q6_K.
int sub_block_elements(DType dtype);
// Whether any sub-block can have a non-zero min (Q4_K, Q5_K).
bool has_mins(DType dtype);
// The codes' range: Q8_0 [-128, 127], Q4_0 [-8, 7], Q4_K [0, 15], Q5_K [0, 31], Q6_K [-32, 31].
int min_code(DType dtype);
int max_code(DType dtype);

// A block's sub-block scales and mins as factors: scale b = f16(d) * scale[b] and min b =
// f16(dmin) * min[b], both products exact in f32 (11 by at most 8 significant bits). Q8_0 and
// Q4_0 have one sub-block with scale 1 and no min.
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

// Encodes n floats into row_bytes(dtype, n) bytes: llama.cpp's rounding for Q8_0 and Q4_0; for
// the k-quants a plain min/max fit per sub-block with 6- or 8-bit sub-block scales (not
// llama.cpp's iterative search, which only matters for real weights).
void quantize_blocks(DType dtype, const float* src, uint8_t* dst, int64_t n);

}  // namespace pagedllm
