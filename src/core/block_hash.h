// Chained block hashes for prefix caching.
//
// A full block's hash covers its parent's hash, its token ids and optional extra keys, so two
// blocks with equal hashes hold the same tokens after the same prefix. 128-bit XXH3 makes an
// accidental collision (which would silently reuse the wrong KV) practically impossible.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

namespace pagedllm {

struct BlockHash {
  uint64_t low = 0;
  uint64_t high = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

// parent is nullopt for the first block of a sequence; extra_key is mixed in when non-empty.
BlockHash hash_block_tokens(std::optional<BlockHash> parent, std::span<const int32_t> token_ids,
                            std::string_view extra_key = {});

}  // namespace pagedllm

template <>
struct std::hash<pagedllm::BlockHash> {
  size_t operator()(const pagedllm::BlockHash& h) const noexcept {
    return static_cast<size_t>(h.low ^ (h.high * 0x9E3779B97F4A7C15ULL));
  }
};
