#include "format/k_quants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "format/dequant.h"

namespace pagedllm::kquants {

namespace {

constexpr int kSuper = 256;

int clamp_round(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::lround(v)), lo, hi);
}

// Q2_K and Q3_K keep their 2-bit fields in 128-element halves of 32 bytes: element e sits in
// byte (e / 128) * 32 + (e % 32 / 16) * 16 + e % 16, at bits 2 * (e % 128 / 32).
int two_bit_byte(int e) {
  return e / 128 * 32 + e % 32 / 16 * 16 + e % 16;
}
int two_bit_shift(int e) {
  return 2 * (e % 128 / 32);
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

// Q3_K's 16 6-bit scales (stored + 32) in 12 bytes: the low 4 bits of scale i in byte i % 8
// (low nibble for i < 8), its top 2 bits in byte 8 + i % 4 at bits 2 * (i / 4).
int q3_k_scale(const uint8_t* q, int i) {
  const int low = i < 8 ? q[i] & 0xF : q[i - 8] >> 4;
  const int high = (q[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | high << 4) - 32;
}

void pack_q3_k_scales(const int* scales, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int i = 0; i < 16; ++i) {
    const int u = scales[i] + 32;
    q[i % 8] |= static_cast<uint8_t>((u & 0xF) << (i < 8 ? 0 : 4));
    q[8 + i % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (i / 4)));
  }
}

// IQ4_XS's 8 6-bit scales (stored + 32): low 4 bits in nibble i % 2 of scales_l[i / 2], top 2
// bits at bits 2 * i of the u16 scales_h.
int iq4_xs_scale(const uint8_t* block, int i) {
  const int low = (block[4 + i / 2] >> (4 * (i % 2))) & 0xF;
  const int high = (load_u16(block + 2) >> (2 * i)) & 3;
  return (low | high << 4) - 32;
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

// Q2_K: codes 0..3 in the 2-bit fields of qs (offset 16).
void unpack_q2_k_codes(const uint8_t* src, int8_t* codes) {
  for (int e = 0; e < kSuper; ++e)
    codes[e] = static_cast<int8_t>((src[16 + two_bit_byte(e)] >> two_bit_shift(e)) & 3);
}

// Q3_K: the low 2 bits in qs (offset 32) and the third in hmask[e % 32] at bit e / 32; the
// code is those 3 bits less 4.
void unpack_q3_k_codes(const uint8_t* src, int8_t* codes) {
  for (int e = 0; e < kSuper; ++e) {
    const int low = (src[32 + two_bit_byte(e)] >> two_bit_shift(e)) & 3;
    const int high = (src[e % 32] >> (e / 32)) & 1;
    codes[e] = static_cast<int8_t>((low | high << 2) - 4);
  }
}

// IQ4_XS: sub-block b of 32 takes table indices from qs[b * 16 + l % 16] (offset 8), the low
// nibble for l < 16.
void unpack_iq4_xs_codes(const uint8_t* src, int8_t* codes) {
  for (int e = 0; e < kSuper; ++e) {
    const uint8_t byte = src[8 + e / 32 * 16 + e % 16];
    codes[e] = kIq4Levels[e % 32 < 16 ? byte & 0xF : byte >> 4];
  }
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

// Q2_K: an affine fit per 16-element sub-block, 4 levels, 4-bit scale and min factors.
void quantize_q2_k(const float* x, uint8_t* dst) {
  std::array<float, 16> scale{}, min{};
  for (int b = 0; b < 16; ++b) {
    const float* s = x + b * 16;
    const float lo = std::min(0.0f, *std::min_element(s, s + 16));
    scale[b] = (*std::max_element(s, s + 16) - lo) / 3.0f;
    min[b] = -lo;
  }
  const float d = f16_to_f32(f32_to_f16(*std::max_element(scale.begin(), scale.end()) / 15.0f));
  const float dmin = f16_to_f32(f32_to_f16(*std::max_element(min.begin(), min.end()) / 15.0f));
  std::memset(dst, 0, 80);
  for (int b = 0; b < 16; ++b) {
    const int ls = d > 0.0f ? clamp_round(scale[b] / d, 0, 15) : 0;
    const int lm = dmin > 0.0f ? clamp_round(min[b] / dmin, 0, 15) : 0;
    dst[b] = static_cast<uint8_t>(ls | lm << 4);
    const float step = d * static_cast<float>(ls), offset = dmin * static_cast<float>(lm);
    for (int e = b * 16; e < b * 16 + 16; ++e) {
      const int q = step > 0.0f ? clamp_round((x[e] + offset) / step, 0, 3) : 0;
      dst[16 + two_bit_byte(e)] |= static_cast<uint8_t>(q << two_bit_shift(e));
    }
  }
  store_u16(dst + 80, f32_to_f16(d));
  store_u16(dst + 82, f32_to_f16(dmin));
}

// The scale that gives each sub-block's value of largest magnitude the code `extreme_code`
// (its sign included, as Q4_0 does), and d over them for signed factors up to `max_factor`.
template <int kSubs>
std::array<float, kSubs> extreme_scales(const float* x, float extreme_code, int max_factor,
                                        float& d) {
  constexpr int n = kSuper / kSubs;
  std::array<float, kSubs> scale{};
  float max_abs_scale = 0.0f;
  for (int b = 0; b < kSubs; ++b) {
    scale[b] = extreme_value(x + b * n, n) / extreme_code;
    max_abs_scale = std::max(max_abs_scale, std::fabs(scale[b]));
  }
  d = f16_to_f32(f32_to_f16(max_abs_scale / static_cast<float>(max_factor)));
  return scale;
}

void quantize_q6_k(const float* x, uint8_t* dst) {
  float d = 0.0f;
  const std::array<float, 16> scale = extreme_scales<16>(x, -32.0f, 127, d);
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

// Q3_K: codes -4..3 per 16-element sub-block, signed 6-bit factors.
void quantize_q3_k(const float* x, uint8_t* dst) {
  float d = 0.0f;
  const std::array<float, 16> scale = extreme_scales<16>(x, -4.0f, 31, d);
  int sc[16];
  std::memset(dst, 0, 96);
  for (int b = 0; b < 16; ++b) {
    sc[b] = d > 0.0f ? clamp_round(scale[b] / d, -32, 31) : 0;
    const float step = d * static_cast<float>(sc[b]);
    for (int e = b * 16; e < b * 16 + 16; ++e) {
      const int u = (step != 0.0f ? clamp_round(x[e] / step, -4, 3) : 0) + 4;
      dst[32 + two_bit_byte(e)] |= static_cast<uint8_t>((u & 3) << two_bit_shift(e));
      dst[e % 32] |= static_cast<uint8_t>((u >> 2) << (e / 32));
    }
  }
  pack_q3_k_scales(sc, dst + 96);
  store_u16(dst + 108, f32_to_f16(d));
}

// IQ4_XS: per 32-element sub-block the table level nearest each value over a signed 6-bit
// factor, the extreme value at level -127.
void quantize_iq4_xs(const float* x, uint8_t* dst) {
  float d = 0.0f;
  const std::array<float, 8> scale = extreme_scales<8>(x, -127.0f, 31, d);
  std::memset(dst, 0, block_bytes(DType::kIQ4_XS));
  store_u16(dst, f32_to_f16(d));
  uint16_t scales_h = 0;
  for (int b = 0; b < 8; ++b) {
    const int ls = d > 0.0f ? clamp_round(scale[b] / d, -32, 31) : 0;
    scales_h = static_cast<uint16_t>(scales_h | ((ls + 32) >> 4) << (2 * b));
    dst[4 + b / 2] |= static_cast<uint8_t>(((ls + 32) & 0xF) << (4 * (b % 2)));
    const float step = d * static_cast<float>(ls);
    for (int l = 0; l < 32; ++l) {
      const int i = nearest_iq4_level(step != 0.0f ? x[b * 32 + l] / step : 0.0f);
      dst[8 + b * 16 + l % 16] |= static_cast<uint8_t>(i << (l < 16 ? 0 : 4));
    }
  }
  store_u16(dst + 2, scales_h);
}

}  // namespace

void unpack_codes(DType dtype, const uint8_t* block, int8_t* codes) {
  switch (dtype) {
    case DType::kQ2_K:
      return unpack_q2_k_codes(block, codes);
    case DType::kQ3_K:
      return unpack_q3_k_codes(block, codes);
    case DType::kQ4_K:
    case DType::kQ5_K:
      return unpack_q45_k_codes(dtype == DType::kQ5_K, block, codes);
    case DType::kQ6_K:
      return unpack_q6_k_codes(block, codes);
    case DType::kIQ4_XS:
      return unpack_iq4_xs_codes(block, codes);
    default:
      return;
  }
}

BlockFactors factors(DType dtype, const uint8_t* block) {
  BlockFactors f;
  switch (dtype) {
    case DType::kQ2_K:
      f.d = load_u16(block + 80);
      f.dmin = load_u16(block + 82);
      f.sub_blocks = 16;
      for (int b = 0; b < 16; ++b) {
        f.scale[b] = static_cast<int8_t>(block[b] & 0xF);
        f.min[b] = static_cast<uint8_t>(block[b] >> 4);
      }
      break;
    case DType::kQ3_K:
      f.d = load_u16(block + 108);
      f.sub_blocks = 16;
      for (int b = 0; b < 16; ++b) f.scale[b] = static_cast<int8_t>(q3_k_scale(block + 96, b));
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
    case DType::kIQ4_XS:
      f.d = load_u16(block);
      f.sub_blocks = 8;
      for (int b = 0; b < 8; ++b) f.scale[b] = static_cast<int8_t>(iq4_xs_scale(block, b));
      break;
    default:
      break;
  }
  return f;
}

void quantize(DType dtype, const float* x, uint8_t* block) {
  switch (dtype) {
    case DType::kQ2_K:
      return quantize_q2_k(x, block);
    case DType::kQ3_K:
      return quantize_q3_k(x, block);
    case DType::kQ4_K:
    case DType::kQ5_K:
      return quantize_q45_k(dtype == DType::kQ5_K, x, block);
    case DType::kQ6_K:
      return quantize_q6_k(x, block);
    case DType::kIQ4_XS:
      return quantize_iq4_xs(x, block);
    default:
      return;
  }
}

}  // namespace pagedllm::kquants
