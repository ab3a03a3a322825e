// The super-block formats, 256 elements a block: llama.cpp's k-quants (Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K) and IQ4_XS. Each decodes to block_quant.h's form: an integer code per element and, per
// sub-block of 16 or 32 elements, an integer scale and min factor over the block's f16 d and
// dmin. block_quant.cpp dispatches here for these types.
#pragma once

#include <cstdint>

#include "format/block_quant.h"

namespace pagedllm::kquants {

// The block's 256 codes, in element order.
void unpack_codes(DType dtype, const uint8_t* block, int8_t* codes);
BlockFactors factors(DType dtype, const uint8_t* block);
// Encodes 256 floats into one block: a plain fit per sub-block (min/max for the formats with
// mins, the extreme value for the others), then the factors over the largest; not llama.cpp's
// iterative search, which only matters for real weights.
void quantize(DType dtype, const float* x, uint8_t* block);

}  // namespace pagedllm::kquants
