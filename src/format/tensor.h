// Weight tensors as the loaders hand them to the model: typed views into mapped or owned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pagedllm {

// Q4_K, Q5_K and Q6_K are llama.cpp's k-quants: super-blocks of 256 with sub-block scales.
// kF8E4M3 is OCP FP8 E4M3 (torch.float8_e4m3fn), used for the 8-bit KV cache.
enum class DType { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K, kF8E4M3 };

inline bool is_block_quantized(DType d) {
  return d == DType::kQ8_0 || d == DType::kQ4_0 || d == DType::kQ4_K || d == DType::kQ5_K ||
         d == DType::kQ6_K;
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
