// Random test inputs shared by the kernel tests.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace pagedllm::test_data {

// `size` draws from N(0, 1).
inline std::vector<float> normal_floats(size_t size, std::mt19937& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> v(size);
  for (float& x : v) x = n(rng);
  return v;
}

}  // namespace pagedllm::test_data
