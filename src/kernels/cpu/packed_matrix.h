// Linear-layer weights re-laid out once at load for the GEMM kernels: panels of 16 output
// features, each panel [K][16] (so 16 outputs are one vector). The last panel is zero-padded.
// Storage by source type:
//   F32, F16  -> f32 elements
//   BF16      -> bf16 elements (widened to f32 in registers)
//   block formats -> u8 codes (code + code_offset(), so that they feed VNNI's u8 x s8 dot
//                product) laid out [K/4][16][4]: four consecutive k of one output are one 32-bit
//                lane. Plus one f32 scale (and, for Q4_K/Q5_K, one f32 min) per (sub-block of
//                k, output): panel scales are [K / quant_block()][16]; a weight is exactly
//                scale * (u - code_offset()) - min, the reference dequantization
//                (block_quant.h). Stacked formats with different sub-blocks share the finest.
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
  // int8 storage: code (k, j) at (k / 4) * 64 + j * 4 + k % 4.
  const uint8_t* u8_panel(int p) const { return panel_bytes(p); }
  int code_offset() const { return code_offset_; }
  // int8 storage: k's sub-block is k >> quant_shift(); scale (b, j) of panel p at b * kPanel + j,
  // and the min likewise (min_panel is null when no stacked format has mins).
  int quant_block() const { return 1 << quant_shift_; }
  int quant_shift() const { return quant_shift_; }
  const float* scale_panel(int p) const { return scales_.get() + scale_offset(p); }
  const float* min_panel(int p) const { return mins_ ? mins_.get() + scale_offset(p) : nullptr; }
  bool has_mins() const { return mins_ != nullptr; }
  size_t bytes() const { return bytes_; }

 private:
  size_t scale_offset(int p) const {
    return static_cast<size_t>(p) * static_cast<size_t>(cols_ >> quant_shift_) * kPanel;
  }
  void pack_row(int n, const WeightMatrix& w, int source_row);
  const uint8_t* panel_bytes(int p) const {
    return data_.get() + static_cast<size_t>(p) * cols_ * kPanel * element_size_;
  }

  int rows_ = 0, cols_ = 0, quant_shift_ = 5, code_offset_ = 0;
  PanelStorage storage_ = PanelStorage::kF32;
  size_t element_size_ = 4;
  size_t bytes_ = 0;
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], FreeDeleter> data_;
  std::unique_ptr<float[], FreeDeleter> scales_, mins_;
};

}  // namespace pagedllm::cpu
