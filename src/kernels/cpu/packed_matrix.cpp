#include "kernels/cpu/packed_matrix.h"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/dequant.h"

namespace pagedllm::cpu {

PackedMatrix::PackedMatrix(const std::vector<const WeightMatrix*>& stacked) {
  if (stacked.empty()) throw std::invalid_argument("nothing to pack");
  cols_ = stacked[0]->cols;
  bf16_ = stacked[0]->dtype == DType::kBF16;
  std::vector<std::pair<const WeightMatrix*, int>> row_source;  // global row -> (matrix, row)
  for (const WeightMatrix* m : stacked) {
    if (!packable(m->dtype)) throw std::invalid_argument("weights of this type are not packed");
    if (m->cols != cols_ || (m->dtype == DType::kBF16) != bf16_) {
      throw std::invalid_argument("stacked matrices must share K and storage type");
    }
    for (int r = 0; r < m->rows; ++r) row_source.emplace_back(m, r);
  }
  rows_ = static_cast<int>(row_source.size());
  const size_t elem = bf16_ ? 2 : 4;
  const size_t per_panel = static_cast<size_t>(cols_) * kPanel;
  bytes_ = static_cast<size_t>(panels()) * per_panel * elem;
  // 64-byte alignment for full-vector loads (aligned_alloc wants a multiple of it).
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes_ + 63) / 64 * 64)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), 0, bytes_);
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(cols_));
#pragma omp for schedule(static)
    for (int n = 0; n < rows_; ++n) {
      const int p = n / kPanel, j = n % kPanel;
      const WeightMatrix& w = *row_source[static_cast<size_t>(n)].first;
      const int source_row = row_source[static_cast<size_t>(n)].second;
      if (bf16_) {
        uint16_t* dst =
            reinterpret_cast<uint16_t*>(data_.get()) + static_cast<size_t>(p) * per_panel;
        std::vector<uint16_t> src(static_cast<size_t>(cols_));
        std::memcpy(src.data(), w.row(source_row), src.size() * 2);
        for (int k = 0; k < cols_; ++k)
          dst[static_cast<size_t>(k) * kPanel + j] = src[static_cast<size_t>(k)];
      } else {
        dequantize_row(w.dtype, w.row(source_row), row.data(), cols_);
        float* dst = reinterpret_cast<float*>(data_.get()) + static_cast<size_t>(p) * per_panel;
        for (int k = 0; k < cols_; ++k)
          dst[static_cast<size_t>(k) * kPanel + j] = row[static_cast<size_t>(k)];
      }
    }
  }
}

}  // namespace pagedllm::cpu
