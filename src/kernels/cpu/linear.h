// Linear layers: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]).
//
// Batch invariance: the sum for one (m, n) is computed in the same order whatever M is, so a
// request's activations never depend on what it is batched with.
#pragma once

#include "loader/tensor.h"

namespace pagedllm::cpu {

// x: [M, w.cols] row-major; y: [M, w.rows] row-major; bias may be null.
void linear(const float* x, int M, const WeightMatrix& w, float* y, const float* bias = nullptr);

// The fixed-order dot product every linear layer uses.
float dot(const float* a, const float* b, int n);

}  // namespace pagedllm::cpu
