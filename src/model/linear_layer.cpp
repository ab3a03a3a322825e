#include "model/linear_layer.h"

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear.h"

namespace pagedllm {

LinearLayer::LinearLayer(std::vector<const WeightMatrix*> weights,
                         std::vector<const float*> biases) {
  bool packable = true;
  for (const WeightMatrix* w : weights) {
    out_features_ += w->rows;
    packable = packable && cpu::PackedMatrix::packable(w->dtype) &&
               (w->dtype == DType::kBF16) == (weights[0]->dtype == DType::kBF16);
  }
  const bool any_bias = std::any_of(biases.begin(), biases.end(), [](const float* b) { return b; });
  if (any_bias) {
    for (size_t i = 0; i < weights.size(); ++i) {
      const float* b = i < biases.size() ? biases[i] : nullptr;
      for (int r = 0; r < weights[i]->rows; ++r) bias_.push_back(b ? b[r] : 0.0f);
    }
  }
  if (packable) {
    packed_ = std::make_unique<cpu::PackedMatrix>(weights);
  } else {
    for (const WeightMatrix* w : weights) unpacked_.push_back(*w);
  }
}

void LinearLayer::apply(const float* x, int M, float* y) const {
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  if (packed_) {
    cpu::gemm_packed(x, M, *packed_, y, bias);
    return;
  }
  if (unpacked_.size() == 1) {
    cpu::linear(x, M, unpacked_[0], y, bias);
    return;
  }
  // Fused but unpackable: run each part, then interleave rows.
  auto& tmp = scratch_;
  int offset = 0;
  for (const WeightMatrix& w : unpacked_) {
    tmp.resize(static_cast<size_t>(M) * w.rows);
    cpu::linear(x, M, w, tmp.data(), bias ? bias + offset : nullptr);
    for (int m = 0; m < M; ++m) {
      std::copy_n(tmp.data() + static_cast<size_t>(m) * w.rows, w.rows,
                  y + static_cast<size_t>(m) * out_features_ + offset);
    }
    offset += w.rows;
  }
}

}  // namespace pagedllm
