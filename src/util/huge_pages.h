// Large buffers on transparent huge pages: this host's THP setting is madvise, so memory gets
// 2 MiB pages only where it asks. Kernels that stride across many 4 KiB pages (a GEMM tile's 8
// activation rows and 8 output rows, attention's K and V tiles a block apart) then walk far
// fewer page-table entries.
#pragma once

#include <cstddef>

namespace pagedllm {

inline constexpr size_t kHugePageBytes = size_t{1} << 21;

// `bytes` aligned to `alignment` (a power of two), or to 2 MiB with MADV_HUGEPAGE advice where
// bytes >= 2 MiB. Not zeroed. Throws std::bad_alloc. Free with free_maybe_huge().
void* allocate_maybe_huge(size_t bytes, size_t alignment = 64);
void free_maybe_huge(void* p);

}  // namespace pagedllm
