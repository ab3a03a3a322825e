#include "format/dequant.h"

#include <algorithm>
#include <cmath>

#include "format/block_quant.h"

namespace pagedllm {

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000;
  const int32_t exp = static_cast<int32_t>((bits >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = bits & 0x7FFFFF;
  if (((bits >> 23) & 0xFF) == 0xFF)
    return static_cast<uint16_t>(sign | 0x7C00 | (mant ? 0x200 : 0));
  if (exp >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - exp;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

namespace {

// The reference dequantization of every block format: s * q - m per element, one block at a
// time on the stack (embedding lookups call this per token).
void dequantize_blocks(DType dtype, const uint8_t* src, float* dst, int64_t n) {
  const int elements = block_elements(dtype), sub = sub_block_elements(dtype);
  int8_t codes[256];
  float scales[16], mins[16];
  for (int64_t b = 0; b < n / elements; ++b, src += block_bytes(dtype), dst += elements) {
    unpack_blocks(dtype, src, elements, codes, scales, mins);
    for (int i = 0; i < elements; ++i) {
      dst[i] = scales[i / sub] * static_cast<float>(codes[i]) - mins[i / sub];
    }
  }
}

}  // namespace

void dequantize_row(DType dtype, const uint8_t* src, float* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load_u16(src + 2 * i));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
      return;
    case DType::kF8E4M3:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp8_e4m3_to_f32(src[i]);
      return;
    default:
      dequantize_blocks(dtype, src, dst, n);
      return;
  }
}

void quantize_row(DType dtype, const float* src, uint8_t* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, f32_to_f16(src[i]));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, f32_to_bf16(src[i]));
      return;
    case DType::kF8E4M3:
      for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_fp8_e4m3(src[i]);
      return;
    default:
      quantize_blocks(dtype, src, dst, n);
      return;
  }
}

}  // namespace pagedllm
