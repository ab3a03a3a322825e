// Large buffers on transparent huge pages: this host's THP setting is madvise, so memory gets
// 2 MiB pages only where it asks. Kernels that stride across many 4 KiB pages then walk far
// fewer page-table entries: decode's one pass over the packed weights, and attention's K and V
// tiles a block apart. Measured on a 2-vCPU Xeon: llama-1b q4_k_m tg128 went from 27.5-27.9 to
// 29.0-29.9 tok/s with the weights on huge pages, and BM_PagedAttention (512 x 512, f32, 12 kv
// heads) from 189 to 216 GFLOP/s with the KV pool on them.
#pragma once

#include <cstddef>

namespace pagedllm {

inline constexpr size_t kHugePageBytes = size_t{1} << 21;

// `bytes` aligned to `alignment` (a power of two), or to 2 MiB with MADV_HUGEPAGE advice where
// bytes >= 2 MiB. Not zeroed. Throws std::bad_alloc. Free with free_maybe_huge().
void* allocate_maybe_huge(size_t bytes, size_t alignment = 64);
void free_maybe_huge(void* p);

// The same, zeroed by OpenMP's threads, each one equal contiguous part. Zeroing is a buffer's
// first touch, where the kernel clears each page it faults in, so on one thread the others wait
// while one core clears a model's worth of pages (llama-1b bf16's 2.5 GB: 30 % of its load on
// the 2-vCPU Zen 5 host), and every page would lie on that thread's NUMA node.
void* allocate_zeroed_maybe_huge(size_t bytes, size_t alignment = 64);

// The deleter for a std::unique_ptr that owns such a buffer.
struct FreeMaybeHuge {
  void operator()(void* p) const { free_maybe_huge(p); }
};

}  // namespace pagedllm
