#include "loader/tensor.h"

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
  }
  return "?";
}

int block_elements(DType dtype) {
  return dtype == DType::kQ8_0 || dtype == DType::kQ4_0 ? 32 : 1;
}

size_t block_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kQ8_0:
      return 2 + 32;  // f16 scale + 32 int8
    case DType::kQ4_0:
      return 2 + 16;  // f16 scale + 32 nibbles
  }
  return 0;
}

size_t row_bytes(DType dtype, int64_t cols) {
  return static_cast<size_t>(cols / block_elements(dtype)) * block_bytes(dtype);
}

}  // namespace pagedllm
