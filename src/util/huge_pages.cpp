#include "util/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace pagedllm {

void* allocate_maybe_huge(size_t bytes, size_t alignment) {
  const bool huge = bytes >= kHugePageBytes;
  void* p = nullptr;
  const size_t align =
      huge ? std::max(alignment, kHugePageBytes) : std::max(alignment, sizeof(void*));
  if (posix_memalign(&p, align, std::max<size_t>(bytes, 1)) != 0) throw std::bad_alloc();
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
  return p;
}

void* allocate_zeroed_maybe_huge(size_t bytes, size_t alignment) {
  auto* p = static_cast<unsigned char*>(allocate_maybe_huge(bytes, alignment));
  const auto parts = static_cast<int64_t>((bytes + kHugePageBytes - 1) / kHugePageBytes);
#pragma omp parallel for schedule(static) if (parts > 1)
  for (int64_t i = 0; i < parts; ++i) {
    const size_t begin = static_cast<size_t>(i) * kHugePageBytes;
    std::memset(p + begin, 0, std::min(kHugePageBytes, bytes - begin));
  }
  return p;
}

void free_maybe_huge(void* p) {
  std::free(p);
}

}  // namespace pagedllm
