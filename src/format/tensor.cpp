#include "format/tensor.h"

namespace pagedllm {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kQ8_0:
      return "Q8_0";
    case DType::kQ4_0:
      return "Q4_0";
    case DType::kQ4_1:
      return "Q4_1";
    case DType::kQ5_0:
      return "Q5_0";
    case DType::kQ5_1:
      return "Q5_1";
    case DType::kIQ4_NL:
      return "IQ4_NL";
    case DType::kQ2_K:
      return "Q2_K";
    case DType::kQ3_K:
      return "Q3_K";
    case DType::kIQ4_XS:
      return "IQ4_XS";
    case DType::kQ4_K:
      return "Q4_K";
    case DType::kQ5_K:
      return "Q5_K";
    case DType::kQ6_K:
      return "Q6_K";
    case DType::kF8E4M3:
      return "F8_E4M3";
  }
  return "?";
}

int block_elements(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
      return 32;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      return 256;
    default:
      return 1;
  }
}

size_t block_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF8E4M3:
      return 1;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kQ8_0:
      return 2 + 32;  // f16 scale + 32 int8
    case DType::kQ4_0:
      return 2 + 16;  // f16 scale + 32 nibbles
    case DType::kQ4_1:
      return 2 + 2 + 16;  // f16 scale, f16 min, 32 nibbles
    case DType::kQ5_0:
      return 2 + 4 + 16;  // f16 scale, 32 high bits, 32 nibbles
    case DType::kQ5_1:
      return 2 + 2 + 4 + 16;  // f16 scale, f16 min, 32 high bits, 32 nibbles
    case DType::kIQ4_NL:
      return 2 + 16;  // f16 scale, 32 table indices
    case DType::kQ2_K:
      return 16 + 64 + 2 + 2;  // 16 4-bit scale/min pairs, 256 2-bit codes, f16 d, f16 dmin
    case DType::kQ3_K:
      return 32 + 64 + 12 + 2;  // high bits, low 2-bit pairs, 16 6-bit scales, f16 d
    case DType::kIQ4_XS:
      return 2 + 2 + 4 + 128;  // f16 d, 8 6-bit scales (2 + 4 bits), 256 table indices
    case DType::kQ4_K:
      return 2 + 2 + 12 + 128;  // f16 d, f16 dmin, 8 6-bit scales and mins, 256 nibbles
    case DType::kQ5_K:
      return 2 + 2 + 12 + 32 + 128;  // as Q4_K plus one high bit per weight
    case DType::kQ6_K:
      return 128 + 64 + 16 + 2;  // low nibbles, high 2-bit pairs, 16 int8 scales, f16 d
  }
  return 0;
}

size_t row_bytes(DType dtype, int64_t cols) {
  return static_cast<size_t>(cols / block_elements(dtype)) * block_bytes(dtype);
}

}  // namespace pagedllm
