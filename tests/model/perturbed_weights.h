// Random weights whose norms sit away from 1 and whose q/k/v biases are large, so that a
// reference comparison really tests the norm weights and the biases (random_weights gives norms
// of 1 and biases of 0).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "model/presets.h"

namespace pagedllm::test {

inline WeightSource perturbed_weights(const ModelConfig& c, uint64_t seed) {
  WeightSource base = random_weights(c, seed);
  return [base](WeightRole role, int layer, std::vector<float>& out) {
    base(role, layer, out);
    const bool norm = role == WeightRole::kAttnNorm || role == WeightRole::kFfnNorm ||
                      role == WeightRole::kFinalNorm || role == WeightRole::kQNorm ||
                      role == WeightRole::kKNorm;
    const bool bias = role == WeightRole::kBq || role == WeightRole::kBk || role == WeightRole::kBv;
    for (size_t i = 0; i < out.size() && (norm || bias); ++i) {
      out[i] = norm ? 1.0f + 0.3f * static_cast<float>(std::sin(i * 1.7 + layer))
                    : 0.5f * static_cast<float>(std::cos(i * 0.9 + layer));
    }
  };
}

}  // namespace pagedllm::test
