#include "format/block_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "format/dequant.h"
#include "format/k_quants.h"

namespace pagedllm {

namespace {

bool is_super_block(DType dtype) {
  return block_elements(dtype) == 256;
}

// The 32-element formats put element j (< 16) in the low nibble of qs[j] and j + 16 in its high
// nibble; Q5_0 and Q5_1 add bit j of the little-endian u32 qh as the fifth bit.
int nibble(const uint8_t* qs, int j) {
  return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
}

int fifth_bit(const uint8_t* qh, int j) {
  return (qh[j / 8] >> (j % 8)) & 1;
}

void unpack_small_block(DType dtype, const uint8_t* src, int8_t* c) {
  for (int j = 0; j < 32; ++j) {
    int q = 0;
    switch (dtype) {
      case DType::kQ8_0:
        q = static_cast<int8_t>(src[2 + j]);
        break;
      case DType::kQ4_0:
        q = nibble(src + 2, j) - 8;
        break;
      case DType::kQ4_1:
        q = nibble(src + 4, j);
        break;
      case DType::kQ5_0:
        q = (nibble(src + 6, j) | fifth_bit(src + 2, j) << 4) - 16;
        break;
      case DType::kQ5_1:
        q = nibble(src + 8, j) | fifth_bit(src + 4, j) << 4;
        break;
      case DType::kIQ4_NL:
        q = kIq4Levels[nibble(src + 2, j)];
        break;
      default:
        break;
    }
    c[j] = static_cast<int8_t>(q);
  }
}

void quantize_q8_0(const float* src, uint8_t* dst) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(src[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(dst, f32_to_f16(d));
  for (int j = 0; j < 32; ++j) {
    dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(src[j] * id)));
  }
}

// Q4_0 (levels 16) and Q5_0 (32): the extreme value gets code -levels / 2, as llama.cpp rounds.
void quantize_q45_0(int levels, const float* src, uint8_t* dst) {
  const float d = extreme_value(src, 32) / static_cast<float>(-levels / 2);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const bool five = levels == 32;
  uint8_t* qs = dst + (five ? 6 : 2);
  store_u16(dst, f32_to_f16(d));
  std::memset(dst + 2, 0, five ? 20 : 16);
  for (int j = 0; j < 32; ++j) {
    const int q = std::min(levels - 1, static_cast<int>(src[j] * id + levels / 2 + 0.5f));
    qs[j % 16] |= static_cast<uint8_t>((q & 0xF) << (j < 16 ? 0 : 4));
    if (five) dst[2 + j / 8] |= static_cast<uint8_t>((q >> 4) << (j % 8));
  }
}

// Q4_1 (levels 16) and Q5_1 (32): an affine fit, d over the range and the block's min added.
void quantize_q45_1(int levels, const float* src, uint8_t* dst) {
  const float lo = *std::min_element(src, src + 32), hi = *std::max_element(src, src + 32);
  const float d = (hi - lo) / static_cast<float>(levels - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const bool five = levels == 32;
  uint8_t* qs = dst + (five ? 8 : 4);
  store_u16(dst, f32_to_f16(d));
  store_u16(dst + 2, f32_to_f16(lo));
  std::memset(dst + 4, 0, five ? 20 : 16);
  for (int j = 0; j < 32; ++j) {
    const int q = std::min(levels - 1, static_cast<int>((src[j] - lo) * id + 0.5f));
    qs[j % 16] |= static_cast<uint8_t>((q & 0xF) << (j < 16 ? 0 : 4));
    if (five) dst[4 + j / 8] |= static_cast<uint8_t>((q >> 4) << (j % 8));
  }
}

// IQ4_NL: the extreme value at level -127, every value at its nearest level.
void quantize_iq4_nl(const float* src, uint8_t* dst) {
  const float d = f16_to_f32(f32_to_f16(extreme_value(src, 32) / -127.0f));
  store_u16(dst, f32_to_f16(d));
  std::memset(dst + 2, 0, 16);
  for (int j = 0; j < 32; ++j) {
    const int i = nearest_iq4_level(d != 0.0f ? src[j] / d : 0.0f);
    dst[2 + j % 16] |= static_cast<uint8_t>(i << (j < 16 ? 0 : 4));
  }
}

}  // namespace

float extreme_value(const float* x, int n) {
  float amax = 0.0f, extreme = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      extreme = x[j];
    }
  }
  return extreme;
}

int nearest_iq4_level(float v) {
  int best = 0;
  for (int i = 1; i < 16; ++i) {
    if (std::fabs(v - kIq4Levels[i]) < std::fabs(v - kIq4Levels[best])) best = i;
  }
  return best;
}

int sub_block_elements(DType dtype) {
  return dtype == DType::kQ2_K || dtype == DType::kQ3_K || dtype == DType::kQ6_K ? 16 : 32;
}

bool has_mins(DType dtype) {
  return dtype == DType::kQ4_1 || dtype == DType::kQ5_1 || dtype == DType::kQ2_K ||
         dtype == DType::kQ4_K || dtype == DType::kQ5_K;
}

int min_code(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0:
      return -8;
    case DType::kQ5_0:
      return -16;
    case DType::kQ3_K:
      return -4;
    case DType::kQ6_K:
      return -32;
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ2_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
      return 0;
    default:
      return -128;
  }
}

int max_code(DType dtype) {
  switch (dtype) {
    case DType::kQ2_K:
      return 3;
    case DType::kQ3_K:
      return 3;
    case DType::kQ4_0:
      return 7;
    case DType::kQ5_0:
      return 15;
    case DType::kQ4_1:
    case DType::kQ4_K:
      return 15;
    case DType::kQ5_1:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return 31;
    default:
      return 127;
  }
}

BlockFactors block_factors(DType dtype, const uint8_t* block) {
  if (is_super_block(dtype)) return kquants::factors(dtype, block);
  BlockFactors f;
  f.d = load_u16(block);
  f.sub_blocks = 1;
  f.scale[0] = 1;
  if (has_mins(dtype)) {
    f.dmin = static_cast<uint16_t>(load_u16(block + 2) ^ 0x8000);  // s * q + m = s * q - (-m)
    f.min[0] = 1;
  }
  return f;
}

void unpack_blocks(DType dtype, const uint8_t* src, int64_t n, int8_t* codes, float* scales,
                   float* mins) {
  const int64_t blocks = n / block_elements(dtype);
  const size_t bytes = block_bytes(dtype);
  const int subs = block_elements(dtype) / sub_block_elements(dtype);
  if (!is_block_quantized(dtype)) return;
  for (int64_t b = 0; b < blocks; ++b, src += bytes) {
    int8_t* c = codes + b * block_elements(dtype);
    if (is_super_block(dtype)) {
      kquants::unpack_codes(dtype, src, c);
    } else {
      unpack_small_block(dtype, src, c);
    }
    const BlockFactors f = block_factors(dtype, src);
    const float d = f16_to_f32(f.d), dmin = f16_to_f32(f.dmin);
    for (int i = 0; i < subs; ++i) {
      scales[b * subs + i] = d * static_cast<float>(f.scale[i]);
      mins[b * subs + i] = dmin * static_cast<float>(f.min[i]);
    }
  }
}

void quantize_blocks(DType dtype, const float* src, uint8_t* dst, int64_t n) {
  const int64_t elements = block_elements(dtype);
  const size_t bytes = block_bytes(dtype);
  if (!is_block_quantized(dtype)) return;
  for (int64_t b = 0; b < n / elements; ++b, src += elements, dst += bytes) {
    switch (dtype) {
      case DType::kQ8_0:
        quantize_q8_0(src, dst);
        break;
      case DType::kQ4_0:
      case DType::kQ5_0:
        quantize_q45_0(dtype == DType::kQ4_0 ? 16 : 32, src, dst);
        break;
      case DType::kQ4_1:
      case DType::kQ5_1:
        quantize_q45_1(dtype == DType::kQ4_1 ? 16 : 32, src, dst);
        break;
      case DType::kIQ4_NL:
        quantize_iq4_nl(src, dst);
        break;
      default:
        kquants::quantize(dtype, src, dst);
        break;
    }
  }
}

}  // namespace pagedllm
