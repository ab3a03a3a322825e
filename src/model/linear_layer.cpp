#include "model/linear_layer.h"

#include <algorithm>

#include "kernels/cpu/gemm.h"

namespace pagedllm {

namespace {

// Weights that pack together without a cost: int8 codes of one format (packed with another, a
// format's codes widen to the wider one's: a Q4_K weight stacked with a Q6_K one runs the 6-bit
// path and reads 6 bits a weight), and the f32 or bf16 storage classes whole.
bool pack_together(const WeightMatrix& a, const WeightMatrix& b) {
  using cpu::PackedMatrix;
  if (PackedMatrix::storage_of(a.dtype) != PackedMatrix::storage_of(b.dtype)) return false;
  return PackedMatrix::storage_of(a.dtype) != cpu::PanelStorage::kInt8 || a.dtype == b.dtype;
}

}  // namespace

LinearLayer::LinearLayer(std::vector<const WeightMatrix*> weights,
                         std::vector<const float*> biases) {
  for (const WeightMatrix* w : weights) out_features_ += w->rows;
  if (std::any_of(biases.begin(), biases.end(), [](const float* b) { return b; })) {
    for (size_t i = 0; i < weights.size(); ++i) {
      const float* b = i < biases.size() ? biases[i] : nullptr;
      for (int r = 0; r < weights[i]->rows; ++r) bias_.push_back(b ? b[r] : 0.0f);
    }
  }
  // One part per run of consecutive weights that pack together (a Q4_K_M file's QKV in the
  // layers with a Q6_K V: Q and K as one Q4_K part, V as a Q6_K part).
  for (size_t begin = 0; begin < weights.size();) {
    size_t end = begin + 1;
    while (end < weights.size() && pack_together(*weights[begin], *weights[end])) ++end;
    parts_.emplace_back(
        std::vector<const WeightMatrix*>(weights.begin() + begin, weights.begin() + end));
    begin = end;
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
