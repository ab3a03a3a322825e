// A linear layer as the model uses it: packed for the GEMM kernels where the weight type allows
// (F32, F16, BF16), else read in place through the dequantizing kernel (Q8_0, Q4_0). Several
// weights with the same input can be fused into one layer (QKV, gate/up): their outputs come
// out side by side in each row.
#pragma once

#include <memory>
#include <vector>

#include "kernels/cpu/packed_matrix.h"
#include "loader/tensor.h"

namespace pagedllm {

class LinearLayer {
 public:
  LinearLayer() = default;
  // biases: one per weight, each null or of that weight's rows.
  LinearLayer(std::vector<const WeightMatrix*> weights, std::vector<const float*> biases = {});

  int out_features() const { return out_features_; }
  // y[M, out_features()] = x[M, K] . W^T + bias.
  void apply(const float* x, int M, float* y) const;

 private:
  int out_features_ = 0;
  std::unique_ptr<cpu::PackedMatrix> packed_;
  std::vector<WeightMatrix> unpacked_;  // used when the type cannot be packed
  std::vector<float> bias_;
  mutable std::vector<float> scratch_;  // apply() is const but reuses this buffer
};

}  // namespace pagedllm
