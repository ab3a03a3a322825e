// A std::allocator that aligns to cache lines: AMX and AVX-512 kernels (oneDNN's among them) load
// whole 64-byte rows, and one that straddles two lines halves their throughput (oneDNN bf16
// matmul, M=512, K=2048, N=4096: 1.8 TFLOP/s with the source on a line boundary, 0.9 at 16 bytes
// past one).
#pragma once

#include <cstddef>
#include <new>

#include "util/huge_pages.h"

namespace pagedllm {

template <typename T, size_t Alignment = 64>
struct AlignedAllocator {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = AlignedAllocator<U, Alignment>;
  };

  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U, Alignment>&) {}

  // 2 MiB and more on transparent huge pages (huge_pages.h).
  T* allocate(size_t n) { return static_cast<T*>(allocate_maybe_huge(n * sizeof(T), Alignment)); }
  void deallocate(T* p, size_t) { free_maybe_huge(p); }

  template <typename U>
  bool operator==(const AlignedAllocator<U, Alignment>&) const {
    return true;
  }
};

}  // namespace pagedllm
