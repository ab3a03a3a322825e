#include "kernels/kv_cache.h"

#include <stdexcept>
#include <string>

namespace pagedllm {

PagedKVCache::PagedKVCache(const KVCacheSpec& spec) : spec_(spec) {
  if (spec.head_size % KVCacheSpec::kX != 0) {
    throw std::invalid_argument("head_size must be a multiple of " +
                                std::to_string(KVCacheSpec::kX) + " for the paged KV layout");
  }
  storage_ = std::make_unique_for_overwrite<float[]>(
      static_cast<size_t>(2 * spec.num_layers * spec.floats_per_layer()));
}

KVCacheLayer PagedKVCache::layer(int l) {
  float* base = storage_.get() + static_cast<size_t>(2 * l * spec_.floats_per_layer());
  return KVCacheLayer{base, base + spec_.floats_per_layer(), spec_};
}

}  // namespace pagedllm
