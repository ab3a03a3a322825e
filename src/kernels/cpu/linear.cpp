#include "kernels/cpu/linear.h"

namespace pagedllm::cpu {

float dot(const float* a, const float* b, int n) {
  // 16 independent lanes (vectorizable without reassociation), then a fixed tree.
  float acc[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += a[i] * b[i];
  for (int width = 8; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  }
  return acc[0];
}

}  // namespace pagedllm::cpu
