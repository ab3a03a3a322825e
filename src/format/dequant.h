// Conversions from stored weight formats to f32.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "format/tensor.h"

namespace pagedllm {

inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// IEEE half to float, subnormals and specials included.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000 | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    exp = 113;
    while (!(mant & 0x400)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t f32_to_f16(float f);

// Round to nearest even, NaN kept quiet. Inline: the KV cache store calls it per element.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// Writes n (a multiple of block_elements(dtype)) floats decoded from src.
void dequantize_row(DType dtype, const uint8_t* src, float* dst, int64_t n);
// The inverse: encodes n floats into row_bytes(dtype, n) bytes at dst (llama.cpp's reference
// rounding for Q8_0 and Q4_0).
void quantize_row(DType dtype, const float* src, uint8_t* dst, int64_t n);

}  // namespace pagedllm
