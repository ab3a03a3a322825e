#include "util/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
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

void free_maybe_huge(void* p) {
  std::free(p);
}

}  // namespace pagedllm
