// Linear-layer weights re-laid out once at load for the GEMM kernels: panels of 16 output
// features, each panel [K][16] (so 16 outputs are one vector), f32 or bf16 elements. The last
// panel is zero-padded.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "loader/tensor.h"

namespace pagedllm::cpu {

class PackedMatrix {
 public:
  static constexpr int kPanel = 16;

  PackedMatrix() = default;
  // Packs F32, F16 and BF16 weights (F16 becomes f32, BF16 stays bf16); several matrices with
  // the same K are stacked along N (fused QKV, fused gate/up). Other types are not packed
  // (packable() says which).
  explicit PackedMatrix(const WeightMatrix& w)
      : PackedMatrix(std::vector<const WeightMatrix*>{&w}) {}
  explicit PackedMatrix(const std::vector<const WeightMatrix*>& stacked);
  static bool packable(DType dtype) {
    return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
  }

  int rows() const { return rows_; }  // N, output features
  int cols() const { return cols_; }  // K, input features
  int panels() const { return (rows_ + kPanel - 1) / kPanel; }
  bool is_bf16() const { return bf16_; }
  // Panel p: cols() * kPanel elements, element (k, j) at k * kPanel + j.
  const float* f32_panel(int p) const {
    return reinterpret_cast<const float*>(data_.get()) + static_cast<size_t>(p) * cols_ * kPanel;
  }
  const uint16_t* bf16_panel(int p) const {
    return reinterpret_cast<const uint16_t*>(data_.get()) + static_cast<size_t>(p) * cols_ * kPanel;
  }
  size_t bytes() const { return bytes_; }

 private:
  int rows_ = 0, cols_ = 0;
  bool bf16_ = false;
  size_t bytes_ = 0;
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], FreeDeleter> data_;
};

}  // namespace pagedllm::cpu
