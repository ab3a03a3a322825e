// The paged KV cache storage. Values are always vLLM's paged_attention_v1 layout:
//   value_cache [num_blocks, num_kv_heads, head_size, block_size]
// Keys take one of two layouts:
//   kHeadMajor (the default on CPU): like the values, [num_blocks, num_kv_heads, head_size,
//     block_size]. For one dimension d, consecutive positions are contiguous, so a CPU kernel
//     takes the dot products of 16 positions with one vector per d and reads K and V alike.
//   kVllmX: paged_attention_v1's [num_blocks, num_kv_heads, head_size / x, block_size, x] with
//     x = 16 bytes / element, the layout GPU kernels coalesce on. Measured on this CPU, it made
//     the attention gather cost as much as the attention itself (docs/BENCHMARKS.md).
// Elements are f32 or bf16. Slot s lives in block s / block_size at offset s % block_size.
// Block 0 is never written with real data (it is the null block).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "loader/tensor.h"

namespace pagedllm {

enum class KeyLayout { kHeadMajor, kVllmX };

struct KVCacheSpec {
  int num_layers = 0;
  int num_blocks = 0;
  int block_size = 16;
  int num_kv_heads = 0;
  int head_size = 0;
  DType dtype = DType::kF32;  // kF32 or kBF16
  KeyLayout key_layout = KeyLayout::kHeadMajor;

  int element_size() const { return dtype == DType::kF32 ? 4 : 2; }
  int x() const { return 16 / element_size(); }
  // K and V of every layer for one block, in bytes.
  int64_t bytes_per_block() const {
    return 2LL * num_layers * num_kv_heads * head_size * block_size * element_size();
  }
  int64_t elements_per_layer() const {
    return int64_t{num_blocks} * num_kv_heads * head_size * block_size;
  }
};

// One layer's caches with index helpers for the layout above (indices in elements).
struct KVCacheLayer {
  void* key = nullptr;
  void* value = nullptr;
  KVCacheSpec spec;

  size_t key_index(int64_t block, int head, int d, int offset) const {
    if (spec.key_layout == KeyLayout::kHeadMajor) return value_index(block, head, d, offset);
    const int x = spec.x();
    return static_cast<size_t>(
        (((block * spec.num_kv_heads + head) * (spec.head_size / x) + d / x) * spec.block_size +
         offset) *
            x +
        d % x);
  }
  size_t value_index(int64_t block, int head, int d, int offset) const {
    return static_cast<size_t>(
        ((block * spec.num_kv_heads + head) * spec.head_size + d) * spec.block_size + offset);
  }
};

class PagedKVCache {
 public:
  // Throws std::invalid_argument for an unsupported dtype or head size.
  explicit PagedKVCache(const KVCacheSpec& spec);
  const KVCacheSpec& spec() const { return spec_; }
  KVCacheLayer layer(int l);

 private:
  KVCacheSpec spec_;
  // Left uninitialized: untouched pages cost no memory, and attention only reads written slots.
  std::unique_ptr<uint8_t[]> storage_;
};

}  // namespace pagedllm
