#include "kernels/kv_cache.h"

#include <stdexcept>
#include <string>

namespace pagedllm {

PagedKVCache::PagedKVCache(const KVCacheSpec& spec) : spec_(spec) {
  if (spec.dtype != DType::kF32 && spec.dtype != DType::kBF16 && spec.dtype != DType::kF8E4M3 &&
      spec.dtype != DType::kQ8_0) {
    throw std::invalid_argument("KV cache dtype must be f32, bf16, fp8 (E4M3) or q8_0");
  }
  if (spec.dtype == DType::kQ8_0 && spec.layout != KVLayout::kCpu) {
    throw std::invalid_argument("a q8_0 KV cache needs the CPU layout");
  }
  if (spec.head_size <= 0 || spec.head_size > 512) {
    throw std::invalid_argument("head_size must be in [1, 512] for the CPU attention kernel");
  }
  if (spec.layout == KVLayout::kVllmV1 && spec.head_size % spec.x() != 0) {
    throw std::invalid_argument("head_size must be a multiple of " + std::to_string(spec.x()) +
                                " for the paged KV layout");
  }
  const auto bytes = static_cast<size_t>(spec.num_blocks * spec.bytes_per_block());
  // On huge pages: one head's K and V tiles lie a block (all kv heads) apart, one 4 KiB page
  // each at llama-110m's shape.
  storage_.reset(static_cast<uint8_t*>(allocate_zeroed_maybe_huge(bytes)));
}

// Layer l's region: its K elements, its V elements, then (q8_0) its K and V scales.
KVCacheLayer PagedKVCache::layer(int l) {
  const auto elements = static_cast<size_t>(spec_.elements_per_layer() * spec_.element_size());
  const auto scales = static_cast<size_t>(spec_.scales_per_layer()) * sizeof(uint16_t);
  uint8_t* base = storage_.get() + static_cast<size_t>(l) * 2 * (elements + scales);
  KVCacheLayer layer{base, base + elements, spec_};
  if (scales > 0) {
    layer.key_scale = reinterpret_cast<uint16_t*>(base + 2 * elements);
    layer.value_scale = reinterpret_cast<uint16_t*>(base + 2 * elements + scales);
  }
  return layer;
}

}  // namespace pagedllm
