#include "util/aligned_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/bf16_activations.h"

namespace pagedllm {
namespace {

bool on_cache_line(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(AlignedAllocator, EveryBufferStartsOnACacheLineWhateverItsSize) {
  for (size_t n : {1, 3, 17, 1000, 123457}) {
    std::vector<float, AlignedAllocator<float>> v(n, 1.0f);
    EXPECT_TRUE(on_cache_line(v.data())) << n;
    v.resize(n * 3 + 1);  // a reallocation keeps the alignment
    EXPECT_TRUE(on_cache_line(v.data())) << n;
    EXPECT_EQ(v[0], 1.0f);
  }
}

// oneDNN's AMX kernels run at half speed on a row that straddles cache lines.
TEST(AlignedAllocator, Bf16ActivationRowsStartOnCacheLinesWhenKIsWholeBlocks) {
  std::vector<float> x(7 * 96, 0.25f);
  cpu::Bf16Activations xb;
  cpu::round_activations_to_bf16(cpu::Isa::kGeneric, x.data(), 7, 96, xb);
  for (int m = 0; m < 7; ++m) EXPECT_TRUE(on_cache_line(xb.row(m))) << m;
}

}  // namespace
}  // namespace pagedllm
