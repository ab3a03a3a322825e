#include "kernels/cpu/packed_matrix.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/cpu/block_quant.h"
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

}  // namespace

PanelStorage PackedMatrix::storage_of(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return PanelStorage::kBF16;
    case DType::kF32:
    case DType::kF16:
      return PanelStorage::kF32;
    default:
      return PanelStorage::kInt8;
  }
}

PackedMatrix::PackedMatrix(const std::vector<const WeightMatrix*>& stacked) {
  if (stacked.empty()) throw std::invalid_argument("nothing to pack");
  cols_ = stacked[0]->cols;
  storage_ = storage_of(stacked[0]->dtype);
  std::vector<std::pair<const WeightMatrix*, int>> row_source;  // global row -> (matrix, row)
  bool any_mins = false;
  int quant_block = 32;
  for (const WeightMatrix* m : stacked) {
    if (m->cols != cols_ || storage_of(m->dtype) != storage_) {
      throw std::invalid_argument("stacked matrices must share K and storage class");
    }
    if (storage_ == PanelStorage::kInt8) {
      if (m->cols % block_elements(m->dtype) != 0)
        throw std::invalid_argument("quantized rows must hold whole blocks");
      any_mins = any_mins || cpu::has_mins(m->dtype);
      code_offset_ = std::max(code_offset_, -min_code(m->dtype));
      quant_block = std::min(quant_block, sub_block_elements(m->dtype));
    }
    for (int r = 0; r < m->rows; ++r) row_source.emplace_back(m, r);
  }
  quant_shift_ = quant_block == 16 ? 4 : 5;
  rows_ = static_cast<int>(row_source.size());
  element_size_ = storage_ == PanelStorage::kF32 ? 4 : storage_ == PanelStorage::kBF16 ? 2 : 1;
  bytes_ = static_cast<size_t>(panels()) * cols_ * kPanel * element_size_;
  data_.reset(aligned_array<uint8_t>(bytes_));
  if (storage_ == PanelStorage::kInt8) {
    const size_t count = scale_offset(panels());
    scales_.reset(aligned_array<float>(count));
    if (any_mins) mins_.reset(aligned_array<float>(count));
    bytes_ += count * sizeof(float) * (any_mins ? 2 : 1);
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < rows_; ++n) {
    pack_row(n, *row_source[static_cast<size_t>(n)].first,
             row_source[static_cast<size_t>(n)].second);
  }
}

// Writes source row `source_row` of w as output n: column n % kPanel of panel n / kPanel.
void PackedMatrix::pack_row(int n, const WeightMatrix& w, int source_row) {
  const int p = n / kPanel, j = n % kPanel;
  const uint8_t* src = w.row(source_row);
  uint8_t* panel = data_.get() + static_cast<size_t>(p) * cols_ * kPanel * element_size_;
  const auto at = [j](int k) { return static_cast<size_t>(k) * kPanel + static_cast<size_t>(j); };
  if (storage_ == PanelStorage::kBF16) {
    auto* dst = reinterpret_cast<uint16_t*>(panel);
    for (int k = 0; k < cols_; ++k) dst[at(k)] = load_u16(src + 2 * k);
  } else if (storage_ == PanelStorage::kInt8) {
    const int sub = sub_block_elements(w.dtype);
    std::vector<int8_t> codes(static_cast<size_t>(cols_));
    std::vector<float> scales(static_cast<size_t>(cols_ / sub)), mins(scales.size());
    unpack_blocks(w.dtype, src, cols_, codes.data(), scales.data(), mins.data());
    for (int k = 0; k < cols_; ++k) {
      const size_t i = static_cast<size_t>(k / 4) * kPanel * 4 + static_cast<size_t>(j) * 4 + k % 4;
      panel[i] = static_cast<uint8_t>(codes[static_cast<size_t>(k)] + code_offset_);
    }
    float* s = scales_.get() + scale_offset(p);
    float* m = mins_ ? mins_.get() + scale_offset(p) : nullptr;
    for (int b = 0; b < (cols_ >> quant_shift_); ++b) {
      const size_t from = static_cast<size_t>((b << quant_shift_) / sub);
      s[at(b)] = scales[from];
      if (m) m[at(b)] = mins[from];
    }
  } else {
    std::vector<float> row(static_cast<size_t>(cols_));
    dequantize_row(w.dtype, src, row.data(), cols_);
    auto* dst = reinterpret_cast<float*>(panel);
    for (int k = 0; k < cols_; ++k) dst[at(k)] = row[static_cast<size_t>(k)];
  }
}

}  // namespace pagedllm::cpu
