#include "format/block_quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "format/dequant.h"

namespace pagedllm {

namespace {

constexpr int kSuper = 256;  // elements per k-quant super-block

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void store_u16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, sizeof v);
}

// The 6-bit scale and min of sub-block j (0..7) from Q4_K/Q5_K's 12 packed bytes.
void scale_min_k4(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void pack_scale_min_k4(const int* scales, const int* mins, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] = static_cast<uint8_t>(scales[j]);
      q[j + 4] = static_cast<uint8_t>(mins[j]);
    } else {
      q[j + 4] = static_cast<uint8_t>((scales[j] & 0xF) | ((mins[j] & 0xF) << 4));
      q[j - 4] |= static_cast<uint8_t>((scales[j] >> 4) << 6);
      q[j] |= static_cast<uint8_t>((mins[j] >> 4) << 6);
    }
  }
}

// Q4_K and Q5_K: sub-block b of 32 takes nibble (b % 2) of qs[(b / 2) * 32 + l], and for Q5_K
// bit b of qh[l] on top.
void unpack_q45_k_codes(bool five, const uint8_t* src, int8_t* codes) {
  const uint8_t* qh = src + 16;
  const uint8_t* qs = five ? src + 48 : src + 16;
  for (int b = 0; b < 8; ++b) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = qs[(b / 2) * 32 + l];
      int q = b % 2 == 0 ? byte & 0xF : byte >> 4;
      if (five && (qh[l] >> b & 1)) q += 16;
      codes[b * 32 + l] = static_cast<int8_t>(q);
    }
  }
}

// Q6_K: element e of half h (128 each) sits at l = e % 32 in quarter e / 32 of that half.
void unpack_q6_k_codes(const uint8_t* src, int8_t* codes) {
  const uint8_t* ql = src;
  const uint8_t* qh = src + 128;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo0 = ql[h * 64 + l], lo1 = ql[h * 64 + l + 32], hi = qh[h * 32 + l];
      int8_t* c = codes + h * 128 + l;
      c[0] = static_cast<int8_t>(((lo0 & 0xF) | ((hi & 3) << 4)) - 32);
      c[32] = static_cast<int8_t>(((lo1 & 0xF) | (((hi >> 2) & 3) << 4)) - 32);
      c[64] = static_cast<int8_t>(((lo0 >> 4) | (((hi >> 4) & 3) << 4)) - 32);
      c[96] = static_cast<int8_t>(((lo1 >> 4) | (((hi >> 6) & 3) << 4)) - 32);
    }
  }
}

int clamp_round(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::lround(v)), lo, hi);
}

// Q4_K (levels 15) or Q5_K (levels 31): an affine fit per 32-element sub-block.
void quantize_q45_k(bool five, const float* x, uint8_t* dst) {
  const int levels = five ? 31 : 15;
  std::array<float, 8> scale{}, min{};
  for (int b = 0; b < 8; ++b) {
    const float* s = x + b * 32;
    const float lo = std::min(0.0f, *std::min_element(s, s + 32));
    const float hi = *std::max_element(s, s + 32);
    scale[b] = (hi - lo) / static_cast<float>(levels);
    min[b] = -lo;
  }
  const float d = f16_to_f32(f32_to_f16(*std::max_element(scale.begin(), scale.end()) / 63.0f));
  const float dmin = f16_to_f32(f32_to_f16(*std::max_element(min.begin(), min.end()) / 63.0f));
  int ls[8], lm[8];
  for (int b = 0; b < 8; ++b) {
    ls[b] = d > 0.0f ? clamp_round(scale[b] / d, 0, 63) : 0;
    lm[b] = dmin > 0.0f ? clamp_round(min[b] / dmin, 0, 63) : 0;
  }
  store_u16(dst, f32_to_f16(d));
  store_u16(dst + 2, f32_to_f16(dmin));
  pack_scale_min_k4(ls, lm, dst + 4);
  uint8_t* qh = dst + 16;
  uint8_t* qs = five ? dst + 48 : dst + 16;
  if (five) std::memset(qh, 0, 32);
  std::memset(qs, 0, 128);
  for (int b = 0; b < 8; ++b) {
    const float step = d * static_cast<float>(ls[b]), offset = dmin * static_cast<float>(lm[b]);
    for (int l = 0; l < 32; ++l) {
      const int q = step > 0.0f ? clamp_round((x[b * 32 + l] + offset) / step, 0, levels) : 0;
      qs[(b / 2) * 32 + l] |= static_cast<uint8_t>((q & 0xF) << (4 * (b % 2)));
      if (five) qh[l] |= static_cast<uint8_t>((q >> 4) << b);
    }
  }
}

void quantize_q6_k(const float* x, uint8_t* dst) {
  std::array<float, 16> scale{};
  float max_abs_scale = 0.0f;
  for (int b = 0; b < 16; ++b) {
    float amax = 0.0f, extreme = 0.0f;
    for (int l = 0; l < 16; ++l) {
      const float v = x[b * 16 + l];
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        extreme = v;
      }
    }
    scale[b] = extreme / -32.0f;  // the extreme value gets code -32, as in Q4_0
    max_abs_scale = std::max(max_abs_scale, std::fabs(scale[b]));
  }
  const float d = f16_to_f32(f32_to_f16(max_abs_scale / 127.0f));
  int8_t codes[kSuper];
  auto* sc = reinterpret_cast<int8_t*>(dst + 192);
  for (int b = 0; b < 16; ++b) {
    sc[b] = static_cast<int8_t>(d > 0.0f ? clamp_round(scale[b] / d, -128, 127) : 0);
    const float step = d * static_cast<float>(sc[b]);
    for (int l = 0; l < 16; ++l) {
      codes[b * 16 + l] =
          static_cast<int8_t>(step != 0.0f ? clamp_round(x[b * 16 + l] / step, -32, 31) : 0);
    }
  }
  store_u16(dst + 208, f32_to_f16(d));
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int8_t* c = codes + h * 128 + l;
      const int q0 = c[0] + 32, q1 = c[32] + 32, q2 = c[64] + 32, q3 = c[96] + 32;
      dst[h * 64 + l] = static_cast<uint8_t>((q0 & 0xF) | ((q2 & 0xF) << 4));
      dst[h * 64 + l + 32] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      dst[128 + h * 32 + l] =
          static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
    }
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

void quantize_q4_0(const float* src, uint8_t* dst) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(src[j]) > amax) {
      amax = std::fabs(src[j]);
      max = src[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(dst, f32_to_f16(d));
  for (int j = 0; j < 16; ++j) {
    const auto q0 = std::min(15, static_cast<int>(src[j] * id + 8.5f));
    const auto q1 = std::min(15, static_cast<int>(src[j + 16] * id + 8.5f));
    dst[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

}  // namespace

int sub_block_elements(DType dtype) {
  return dtype == DType::kQ6_K ? 16 : 32;
}

bool has_mins(DType dtype) {
  return dtype == DType::kQ4_K || dtype == DType::kQ5_K;
}

int min_code(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0:
      return -8;
    case DType::kQ4_K:
    case DType::kQ5_K:
      return 0;
    case DType::kQ6_K:
      return -32;
    default:
      return -128;
  }
}

int max_code(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0:
      return 7;
    case DType::kQ4_K:
      return 15;
    case DType::kQ5_K:
      return 31;
    case DType::kQ6_K:
      return 31;
    default:
      return 127;
  }
}

BlockFactors block_factors(DType dtype, const uint8_t* block) {
  BlockFactors f;
  switch (dtype) {
    case DType::kQ8_0:
    case DType::kQ4_0:
      f.d = load_u16(block);
      f.sub_blocks = 1;
      f.scale[0] = 1;
      break;
    case DType::kQ4_K:
    case DType::kQ5_K:
      f.d = load_u16(block);
      f.dmin = load_u16(block + 2);
      f.sub_blocks = 8;
      for (int b = 0; b < 8; ++b) {
        int sc, m;
        scale_min_k4(b, block + 4, sc, m);
        f.scale[b] = static_cast<int8_t>(sc);
        f.min[b] = static_cast<uint8_t>(m);
      }
      break;
    case DType::kQ6_K:
      f.d = load_u16(block + 208);
      f.sub_blocks = 16;
      std::memcpy(f.scale, block + 192, 16);
      break;
    default:
      break;
  }
  return f;
}

void unpack_blocks(DType dtype, const uint8_t* src, int64_t n, int8_t* codes, float* scales,
                   float* mins) {
  const int64_t blocks = n / block_elements(dtype);
  const size_t bytes = block_bytes(dtype);
  const int subs = block_elements(dtype) / sub_block_elements(dtype);
  for (int64_t b = 0; b < blocks; ++b, src += bytes) {
    int8_t* c = codes + b * block_elements(dtype);
    switch (dtype) {
      case DType::kQ8_0:
        std::memcpy(c, src + 2, 32);
        break;
      case DType::kQ4_0:
        for (int j = 0; j < 16; ++j) {
          c[j] = static_cast<int8_t>((src[2 + j] & 0x0F) - 8);
          c[j + 16] = static_cast<int8_t>((src[2 + j] >> 4) - 8);
        }
        break;
      case DType::kQ4_K:
      case DType::kQ5_K:
        unpack_q45_k_codes(dtype == DType::kQ5_K, src, c);
        break;
      case DType::kQ6_K:
        unpack_q6_k_codes(src, c);
        break;
      default:
        return;
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
  for (int64_t b = 0; b < n / elements; ++b, src += elements, dst += bytes) {
    switch (dtype) {
      case DType::kQ8_0:
        quantize_q8_0(src, dst);
        break;
      case DType::kQ4_0:
        quantize_q4_0(src, dst);
        break;
      case DType::kQ4_K:
      case DType::kQ5_K:
        quantize_q45_k(dtype == DType::kQ5_K, src, dst);
        break;
      case DType::kQ6_K:
        quantize_q6_k(src, dst);
        break;
      default:
        return;
    }
  }
}

}  // namespace pagedllm
