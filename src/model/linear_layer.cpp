#include "model/linear_layer.h"

#include <algorithm>

#include "kernels/cpu/gemm.h"

namespace pagedllm {

LinearLayer::LinearLayer(std::vector<const WeightMatrix*> weights,
                         std::vector<const float*> biases) {
  bool same_storage = true;
  for (const WeightMatrix* w : weights) {
    out_features_ += w->rows;
    same_storage = same_storage && cpu::PackedMatrix::storage_of(w->dtype) ==
                                       cpu::PackedMatrix::storage_of(weights[0]->dtype);
  }
  if (std::any_of(biases.begin(), biases.end(), [](const float* b) { return b; })) {
    for (size_t i = 0; i < weights.size(); ++i) {
      const float* b = i < biases.size() ? biases[i] : nullptr;
      for (int r = 0; r < weights[i]->rows; ++r) bias_.push_back(b ? b[r] : 0.0f);
    }
  }
  if (same_storage) {
    parts_.emplace_back(weights);
  } else {
    for (const WeightMatrix* w : weights) parts_.emplace_back(*w);
  }
}

size_t LinearLayer::weight_bytes() const {
  size_t total = 0;
  for (const cpu::PackedMatrix& p : parts_) total += p.bytes();
  return total;
}

void LinearLayer::apply(const float* x, int M, float* y) const {
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  if (parts_.size() == 1) {
    cpu::gemm_packed(x, M, parts_[0], y, bias);
    return;
  }
  int offset = 0;
  for (const cpu::PackedMatrix& part : parts_) {
    scratch_.resize(static_cast<size_t>(M) * part.rows());
    cpu::gemm_packed(x, M, part, scratch_.data(), bias ? bias + offset : nullptr);
    for (int m = 0; m < M; ++m) {
      std::copy_n(scratch_.data() + static_cast<size_t>(m) * part.rows(), part.rows(),
                  y + static_cast<size_t>(m) * out_features_ + offset);
    }
    offset += part.rows();
  }
}

}  // namespace pagedllm
