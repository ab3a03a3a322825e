// Conversions from stored weight formats to f32.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "format/tensor.h"

namespace pagedllm {

// A 16-bit field (an f16 scale, packed scale bits) of block bytes, which need not be aligned.
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_u16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, sizeof v);
}

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

// OCP FP8 E4M3: a sign, 4 exponent bits (bias 7) and 3 mantissa bits; no infinities, the
// largest finite value 448. Its magnitude bits moved up by 7 are an f16's exponent and
// mantissa for the value times 2^-8 (f16's exponent bias is 15), subnormals included, so
// decoding is one f16 conversion and an exact scaling, as the vector paths do it too. Code
// 0x7F (NaN) decodes as 480: the encoder never writes it for a number.
inline float fp8_e4m3_to_f32(uint8_t x) {
  const auto h = static_cast<uint16_t>(((x & 0x80u) << 8) | ((x & 0x7Fu) << 7));
  return f16_to_f32(h) * 256.0f;
}

// Round to nearest even, saturating at +-448 (as vLLM's fp8 KV cache converts); NaN becomes the
// NaN code.
inline uint8_t f32_to_fp8_e4m3(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  if (std::isnan(f)) return sign | 0x7F;
  const float a = std::fabs(f);
  if (a >= 448.0f) return sign | 0x7E;
  if (a < 0.015625f) {  // below 2^-6: subnormal codes, steps of 2^-9 (8 is the smallest normal)
    return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
  }
  uint32_t m = bits & 0x7FFFFFFF;
  m += 0x7FFFF + ((m >> 20) & 1);  // round the mantissa to 3 bits; a carry bumps the exponent
  const auto exponent = static_cast<uint32_t>(static_cast<int>(m >> 23) - 127 + 7);
  const auto code = static_cast<uint8_t>((exponent << 3) | ((m >> 20) & 7));
  return sign | (code > 0x7E ? 0x7E : code);
}

// Writes n (a multiple of block_elements(dtype)) floats decoded from src.
void dequantize_row(DType dtype, const uint8_t* src, float* dst, int64_t n);
// The inverse: encodes n floats into row_bytes(dtype, n) bytes at dst (llama.cpp's reference
// rounding for Q8_0 and Q4_0).
void quantize_row(DType dtype, const float* src, uint8_t* dst, int64_t n);

}  // namespace pagedllm
