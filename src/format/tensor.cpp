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
      return 32;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
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
