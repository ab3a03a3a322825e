#include "util/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kv_cache.h"
#include "util/aligned_allocator.h"

namespace pagedllm {
namespace {

uintptr_t address(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

TEST(HugePages, BuffersOfTwoMiBAndMoreStartOnA2MiBBoundary) {
  for (size_t bytes : {kHugePageBytes, kHugePageBytes + 1, 3 * kHugePageBytes + 4096}) {
    void* p = allocate_maybe_huge(bytes);
    EXPECT_EQ(address(p) % kHugePageBytes, 0u) << bytes;
    std::memset(p, 0x5a, bytes);  // all of it is writable
    EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0x5a);
    free_maybe_huge(p);
  }
}

TEST(HugePages, SmallerBuffersKeepTheAlignmentAskedFor) {
  for (size_t alignment : {size_t{16}, size_t{64}, size_t{4096}}) {
    void* p = allocate_maybe_huge(1000, alignment);
    EXPECT_EQ(address(p) % alignment, 0u) << alignment;
    free_maybe_huge(p);
  }
  free_maybe_huge(allocate_maybe_huge(0));  // an empty buffer is still a buffer
}

TEST(HugePages, ModelWorkspacesAndTheKvPoolOfTwoMiBOrMoreAskForThem) {
  std::vector<float, AlignedAllocator<float>> workspace(kHugePageBytes / sizeof(float));
  EXPECT_EQ(address(workspace.data()) % kHugePageBytes, 0u);
  // 2 layers x K and V x 64 blocks x 16 slots x 8 heads x 64 floats = 8 MiB.
  PagedKVCache cache(KVCacheSpec{2, 64, 16, 8, 64, DType::kF32});
  EXPECT_EQ(address(cache.layer(0).key) % kHugePageBytes, 0u);
  EXPECT_EQ(static_cast<const float*>(cache.layer(1).value)[12345], 0.0f);  // zeroed up front
}

}  // namespace
}  // namespace pagedllm
