// The fixed-order dot product (16 independent lanes, then a fixed tree) used where a reduction
// must not depend on anything but its inputs (RMSNorm).
#pragma once

namespace pagedllm::cpu {

float dot(const float* a, const float* b, int n);

}  // namespace pagedllm::cpu
