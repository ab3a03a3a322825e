// Linear-layer weights re-laid out once at load for the GEMM kernels: panels of 16 output
// features, each panel [K][16] (so 16 outputs are one vector). The last panel is zero-padded.
// Storage by source type:
//   F32, F16  -> f32 elements
//   BF16      -> bf16 elements (widened to f32 in registers)
//   Q8_0, Q4_0 -> int8 elements plus one f32 scale per (32-k block, output): panel scales are
//                [K/32][16]; a weight is exactly scale * q, as the reference dequantization.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "loader/tensor.h"

namespace pagedllm::cpu {

enum class PanelStorage { kF32, kBF16, kInt8 };

class PackedMatrix {
 public:
  static constexpr int kPanel = 16;
  static constexpr int kQuantBlock = 32;

  PackedMatrix() = default;
  // Several matrices with the same K and storage class are stacked along N (fused QKV, fused
  // gate/up). Throws std::invalid_argument otherwise.
  explicit PackedMatrix(const WeightMatrix& w)
      : PackedMatrix(std::vector<const WeightMatrix*>{&w}) {}
  explicit PackedMatrix(const std::vector<const WeightMatrix*>& stacked);
  static PanelStorage storage_of(DType dtype);

  int rows() const { return rows_; }  // N, output features
  int cols() const { return cols_; }  // K, input features
  int panels() const { return (rows_ + kPanel - 1) / kPanel; }
  PanelStorage storage() const { return storage_; }
  bool is_bf16() const { return storage_ == PanelStorage::kBF16; }
  // Panel p: cols() * kPanel elements, element (k, j) at k * kPanel + j.
  const float* f32_panel(int p) const { return reinterpret_cast<const float*>(panel_bytes(p)); }
  const uint16_t* bf16_panel(int p) const {
    return reinterpret_cast<const uint16_t*>(panel_bytes(p));
  }
  const int8_t* int8_panel(int p) const { return reinterpret_cast<const int8_t*>(panel_bytes(p)); }
  // int8 storage: scale (k / 32, j) of panel p at (k / 32) * kPanel + j.
  const float* scale_panel(int p) const {
    return scales_.get() + static_cast<size_t>(p) * (cols_ / kQuantBlock) * kPanel;
  }
  size_t bytes() const { return bytes_; }

 private:
  const uint8_t* panel_bytes(int p) const {
    return data_.get() + static_cast<size_t>(p) * cols_ * kPanel * element_size_;
  }

  int rows_ = 0, cols_ = 0;
  PanelStorage storage_ = PanelStorage::kF32;
  size_t element_size_ = 4;
  size_t bytes_ = 0;
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], FreeDeleter> data_;
  std::unique_ptr<float[], FreeDeleter> scales_;
};

}  // namespace pagedllm::cpu
