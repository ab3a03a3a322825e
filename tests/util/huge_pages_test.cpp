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

TEST(HugePages, ZeroedBuffersAreZeroInEveryThreadsPartEvenOverReusedMemory) {
  // Sizes around the 2 MiB parts the threads zero: a partial last part, one byte, none.
  for (size_t bytes : {3 * kHugePageBytes + 4097, kHugePageBytes - 64, size_t{1}, size_t{0}}) {
    // Dirty memory first, so that a reused block would show a part left unzeroed. glibc maps
    // big blocks fresh (zeros) until freeing one raises its mmap threshold past their size: the
    // larger block freed first makes the dirty one, and the zeroed one after it, heap memory.
    free_maybe_huge(allocate_maybe_huge(bytes + 2 * kHugePageBytes));
    void* dirty = allocate_maybe_huge(bytes);
    std::memset(dirty, 0xA5, bytes);
    free_maybe_huge(dirty);
    auto* p = static_cast<const unsigned char*>(allocate_zeroed_maybe_huge(bytes, 4096));
    EXPECT_EQ(address(p) % 4096, 0u) << bytes;
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
    EXPECT_EQ(nonzero, 0u) << bytes;
    free_maybe_huge(const_cast<unsigned char*>(p));
  }
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
