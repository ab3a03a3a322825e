// Weight tensors as the loaders hand them to the model: typed views into mapped or owned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pagedllm {

// The block formats are llama.cpp's: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL are blocks of 32
// with one f16 scale (and an f16 min for Q4_1 and Q5_1); the k-quants Q2_K to Q6_K and IQ4_XS are
// super-blocks of 256 with integer sub-block scales. IQ4_NL and IQ4_XS map 4-bit indices to
// a fixed table of 16 int8 levels. kF8E4M3 is OCP FP8 E4M3 (torch.float8_e4m3fn), used for the
// 8-bit KV cache.
enum class DType {
  kF32,
  kF16,
  kBF16,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kIQ4_NL,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kIQ4_XS,
  kF8E4M3
};

inline bool is_block_quantized(DType d) {
  return d != DType::kF32 && d != DType::kF16 && d != DType::kBF16 && d != DType::kF8E4M3;
}

const char* to_string(DType dtype);
// Elements per quantization block (1 for plain floats) and bytes per block.
int block_elements(DType dtype);
size_t block_bytes(DType dtype);
// Bytes of a row of `cols` elements; cols must be a multiple of block_elements(dtype).
size_t row_bytes(DType dtype, int64_t cols);

// A row-major [rows, cols] matrix; for a linear layer rows = out features, cols = in features.
struct WeightMatrix {
  DType dtype = DType::kF32;
  int rows = 0;
  int cols = 0;
  const void* data = nullptr;

  size_t row_stride() const { return row_bytes(dtype, cols); }
  const uint8_t* row(int r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_stride();
  }
};

}  // namespace pagedllm
