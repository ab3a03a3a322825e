// The paged KV cache storage, in one of two layouts (one kernel interface for both):
//   kCpu (the default): keys   [num_blocks, num_kv_heads, head_size, block_size]
//                       values [num_blocks, num_kv_heads, block_size, head_size]
//     For one dimension d, the keys of consecutive positions are contiguous, so Q.K takes 16
//     positions per vector; for one position, its value vector is contiguous, so P.V runs over d.
//   kVllmV1: vLLM's paged_attention_v1 layout, what GPU kernels coalesce on:
//                       keys   [num_blocks, num_kv_heads, head_size / x, block_size, x]
//                       values [num_blocks, num_kv_heads, head_size, block_size]
//     with x = 16 bytes / element. Measured on this CPU, its attention gather cost as much as
//     the attention itself: batched llama-110m bf16 ran at 530 tokens/s with it, 748 with keys
//     head-major (2 vCPUs, AVX-512).
// Elements are f32, bf16, fp8 (E4M3, as vLLM's --kv-cache-dtype fp8 with unit scales: a
// quarter of f32's bytes) or q8_0 (llama.cpp's -ctk/-ctv q8_0: groups of 32 elements of one
// position's head vector share an f16 scale; 34 bytes per 32 elements; where head_size is not a
// multiple of 32 the last group is shorter, where llama.cpp refuses such models). Slot s lives in
// block s / block_size at offset s % block_size. Block 0 is never written with real data (it is the
// null block).
//
// q8_0 (CPU layout only) keeps its int8 codes where the other types keep their elements, and
// the scales in two more arrays per layer, laid out as the codes they scale (G = head_size / 32,
// rounded up):
//   key scales   [num_blocks, num_kv_heads, G, block_size]  (positions side by side, as K)
//   value scales [num_blocks, num_kv_heads, block_size, G]  (one position's groups together)
// Element (d, offset) is code * scale[d / 32]: a 7-bit code times an f16 scale is exact in f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "format/tensor.h"
#include "util/huge_pages.h"

namespace pagedllm {

enum class KVLayout { kCpu, kVllmV1 };

struct KVCacheSpec {
  int num_layers = 0;
  int num_blocks = 0;
  int block_size = 16;
  int num_kv_heads = 0;
  int head_size = 0;
  DType dtype = DType::kF32;  // kF32, kBF16, kF8E4M3 or kQ8_0
  KVLayout layout = KVLayout::kCpu;

  static constexpr int kQ8Group = 32;  // elements per q8_0 scale

  // Bytes per element (per code for q8_0; its scales come on top).
  int element_size() const {
    return dtype == DType::kF32 ? 4 : dtype == DType::kF8E4M3 || dtype == DType::kQ8_0 ? 1 : 2;
  }
  int x() const { return 16 / element_size(); }
  // q8_0 scale groups per head vector (the last one shorter where head_size is not a multiple
  // of 32); 0 for the other types.
  int scale_groups() const {
    return dtype == DType::kQ8_0 ? (head_size + kQ8Group - 1) / kQ8Group : 0;
  }
  // K or V of one layer for one block, in bytes: elements, then any scales (f16).
  int64_t bytes_per_layer_block() const {
    return int64_t{num_kv_heads} * block_size *
           (int64_t{head_size} * element_size() + int64_t{scale_groups()} * 2);
  }
  // K and V of every layer for one block, in bytes.
  int64_t bytes_per_block() const { return 2LL * num_layers * bytes_per_layer_block(); }
  int64_t elements_per_layer() const {
    return int64_t{num_blocks} * num_kv_heads * head_size * block_size;
  }
  int64_t scales_per_layer() const {
    return int64_t{num_blocks} * num_kv_heads * scale_groups() * block_size;
  }
};

// One layer's caches with index helpers for the layout above (indices in elements).
struct KVCacheLayer {
  void* key = nullptr;
  void* value = nullptr;
  KVCacheSpec spec;
  uint16_t* key_scale = nullptr;    // q8_0 only: f16 scales, as the comment at the top lays out
  uint16_t* value_scale = nullptr;  // q8_0 only

  size_t key_scale_index(int64_t block, int head, int group, int offset) const {
    return static_cast<size_t>(((block * spec.num_kv_heads + head) * spec.scale_groups() + group) *
                                   spec.block_size +
                               offset);
  }
  size_t value_scale_index(int64_t block, int head, int offset, int group) const {
    return static_cast<size_t>(((block * spec.num_kv_heads + head) * spec.block_size + offset) *
                                   spec.scale_groups() +
                               group);
  }

  size_t key_index(int64_t block, int head, int d, int offset) const {
    if (spec.layout == KVLayout::kCpu) return head_major(block, head, d, offset);
    const int x = spec.x();
    return static_cast<size_t>(
        (((block * spec.num_kv_heads + head) * (spec.head_size / x) + d / x) * spec.block_size +
         offset) *
            x +
        d % x);
  }
  size_t value_index(int64_t block, int head, int d, int offset) const {
    if (spec.layout == KVLayout::kVllmV1) return head_major(block, head, d, offset);
    return static_cast<size_t>(
        ((block * spec.num_kv_heads + head) * spec.block_size + offset) * spec.head_size + d);
  }
  // [blocks, heads, head_size, block_size]
  size_t head_major(int64_t block, int head, int d, int offset) const {
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
  // Zeroed up front by the compute threads (as vLLM and llama.cpp allocate their caches): the
  // pool is resident from the start, and no step pays for first-touch page faults, which cost
  // about a tenth of a llama-110m prefill when every request reached fresh blocks.
  std::unique_ptr<uint8_t[], FreeMaybeHuge> storage_;
};

}  // namespace pagedllm
