#include "core/block_hash.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

namespace pagedllm {

BlockHash hash_block_tokens(std::optional<BlockHash> parent, std::span<const int32_t> token_ids,
                            std::string_view extra_key) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  // A fixed tag distinguishes "no parent" from a parent whose hash happens to be zero.
  const uint8_t has_parent = parent.has_value() ? 1 : 0;
  XXH3_128bits_update(&state, &has_parent, sizeof has_parent);
  if (parent) {
    XXH3_128bits_update(&state, &parent->low, sizeof parent->low);
    XXH3_128bits_update(&state, &parent->high, sizeof parent->high);
  }
  XXH3_128bits_update(&state, token_ids.data(), token_ids.size_bytes());
  if (!extra_key.empty()) XXH3_128bits_update(&state, extra_key.data(), extra_key.size());
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return BlockHash{h.low64, h.high64};
}

}  // namespace pagedllm
