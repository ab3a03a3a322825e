#include "kernels/cpu/packed_matrix.h"

#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/cpu/dequant.h"

namespace pagedllm::cpu {

namespace {

template <typename T>
T* aligned_array(size_t count) {
  const size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes == 0 ? 64 : bytes);
  return static_cast<T*>(p);
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// The quantized values and block scales of one Q8_0 or Q4_0 row.
void unpack_quantized_row(DType dtype, const uint8_t* src, int K, int8_t* q, float* scales) {
  const size_t block = block_bytes(dtype);
  for (int b = 0; b < K / 32; ++b, src += block) {
    scales[b] = f16_to_f32(load_u16(src));
    for (int j = 0; j < 32; ++j) {
      if (dtype == DType::kQ8_0) {
        q[b * 32 + j] = static_cast<int8_t>(src[2 + j]);
      } else {
        const uint8_t byte = src[2 + (j % 16)];
        q[b * 32 + j] = static_cast<int8_t>((j < 16 ? (byte & 0x0F) : (byte >> 4)) - 8);
      }
    }
  }
}

}  // namespace

PanelStorage PackedMatrix::storage_of(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return PanelStorage::kBF16;
    case DType::kQ8_0:
    case DType::kQ4_0:
      return PanelStorage::kInt8;
    default:
      return PanelStorage::kF32;
  }
}

PackedMatrix::PackedMatrix(const std::vector<const WeightMatrix*>& stacked) {
  if (stacked.empty()) throw std::invalid_argument("nothing to pack");
  cols_ = stacked[0]->cols;
  storage_ = storage_of(stacked[0]->dtype);
  std::vector<std::pair<const WeightMatrix*, int>> row_source;  // global row -> (matrix, row)
  for (const WeightMatrix* m : stacked) {
    if (m->cols != cols_ || storage_of(m->dtype) != storage_) {
      throw std::invalid_argument("stacked matrices must share K and storage class");
    }
    for (int r = 0; r < m->rows; ++r) row_source.emplace_back(m, r);
  }
  if (storage_ == PanelStorage::kInt8 && cols_ % kQuantBlock != 0) {
    throw std::invalid_argument("quantized rows must hold whole 32-element blocks");
  }
  rows_ = static_cast<int>(row_source.size());
  element_size_ = storage_ == PanelStorage::kF32 ? 4 : storage_ == PanelStorage::kBF16 ? 2 : 1;
  const size_t per_panel = static_cast<size_t>(cols_) * kPanel;
  bytes_ = static_cast<size_t>(panels()) * per_panel * element_size_;
  data_.reset(aligned_array<uint8_t>(bytes_));
  const size_t scales_per_panel = static_cast<size_t>(cols_ / kQuantBlock) * kPanel;
  if (storage_ == PanelStorage::kInt8) {
    scales_.reset(aligned_array<float>(static_cast<size_t>(panels()) * scales_per_panel));
    bytes_ += static_cast<size_t>(panels()) * scales_per_panel * sizeof(float);
  }
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(cols_));
    std::vector<int8_t> q(static_cast<size_t>(cols_));
    std::vector<float> block_scales(static_cast<size_t>(cols_ / kQuantBlock + 1));
#pragma omp for schedule(static)
    for (int n = 0; n < rows_; ++n) {
      const int p = n / kPanel, j = n % kPanel;
      const WeightMatrix& w = *row_source[static_cast<size_t>(n)].first;
      const uint8_t* src = w.row(row_source[static_cast<size_t>(n)].second);
      uint8_t* panel = data_.get() + static_cast<size_t>(p) * per_panel * element_size_;
      if (storage_ == PanelStorage::kBF16) {
        auto* dst = reinterpret_cast<uint16_t*>(panel);
        for (int k = 0; k < cols_; ++k)
          dst[static_cast<size_t>(k) * kPanel + j] = load_u16(src + 2 * k);
      } else if (storage_ == PanelStorage::kInt8) {
        unpack_quantized_row(w.dtype, src, cols_, q.data(), block_scales.data());
        auto* dst = reinterpret_cast<int8_t*>(panel);
        for (int k = 0; k < cols_; ++k)
          dst[static_cast<size_t>(k) * kPanel + j] = q[static_cast<size_t>(k)];
        float* s = scales_.get() + static_cast<size_t>(p) * scales_per_panel;
        for (int b = 0; b < cols_ / kQuantBlock; ++b)
          s[static_cast<size_t>(b) * kPanel + j] = block_scales[static_cast<size_t>(b)];
      } else {
        dequantize_row(w.dtype, src, row.data(), cols_);
        auto* dst = reinterpret_cast<float*>(panel);
        for (int k = 0; k < cols_; ++k)
          dst[static_cast<size_t>(k) * kPanel + j] = row[static_cast<size_t>(k)];
      }
    }
  }
}

}  // namespace pagedllm::cpu
