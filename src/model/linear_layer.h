// A linear layer as the model uses it: weights packed once for the GEMM kernels. Several
// weights with the same input can be fused into one layer (QKV, gate/up): their outputs come
// out side by side in each row. Consecutive weights of one storage class are packed together,
// block-quantized ones only when their format is the same; any other mix (a Q8_0 file with an
// F32 fallback tensor, a Q4_K_M file's Q6_K V beside its Q4_K Q and K) is packed in parts whose
// outputs are interleaved.
#pragma once

#include <vector>

#include "format/tensor.h"
#include "kernels/cpu/packed_matrix.h"

namespace pagedllm {

class LinearLayer {
 public:
  LinearLayer() = default;
  // biases: one per weight, each null or of that weight's rows.
  LinearLayer(std::vector<const WeightMatrix*> weights, std::vector<const float*> biases = {});

  int out_features() const { return out_features_; }
  // y[M, out_features()] = x[M, K] . W^T + bias.
  void apply(const float* x, int M, float* y) const;
  // Bytes of packed weights (codes, scales) one apply() reads.
  size_t weight_bytes() const;

 private:
  int out_features_ = 0;
  std::vector<cpu::PackedMatrix> parts_;
  std::vector<float> bias_;
  mutable std::vector<float> scratch_;  // apply() is const but reuses this buffer
};

}  // namespace pagedllm
