// Maps requests to KV blocks: allocation, prefix-cache lookups and freeing.
//
// Call order per request: get_computed_blocks() once when it is first scheduled (or resumed),
// then allocate_slots() every step it is scheduled, then free() when it finishes or is
// preempted.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/block_pool.h"
#include "core/request.h"

namespace pagedllm {

struct ComputedBlocks {
  std::vector<KVCacheBlock*> blocks;
  int num_tokens = 0;
};

class KVCacheManager {
 public:
  KVCacheManager(int num_blocks, int block_size, int max_model_len, bool enable_caching);

  int block_size() const { return block_size_; }
  bool caching_enabled() const { return pool_.caching_enabled(); }

  // The longest run of cached full blocks that lies within the first num_tokens - 1 tokens: the
  // last token is always recomputed so that the step yields logits. Block aligned.
  ComputedBlocks get_computed_blocks(Request& request);

  // Makes room for num_new_tokens more tokens after request.num_computed_tokens plus the
  // prefix-hit tokens in `computed`. On success appends the ids of the freshly allocated blocks
  // to new_block_ids and returns true. On failure changes nothing and returns false.
  // The last num_draft_tokens of the new tokens are draft tokens: they get slots but their
  // blocks are not cached, since the drafts may be rejected.
  bool allocate_slots(Request& request, int num_new_tokens, const ComputedBlocks* computed,
                      std::vector<int32_t>& new_block_ids, int num_draft_tokens = 0);

  // Releases every block of the request, tail first so that its tail is evicted first.
  void free(const Request& request);

  // All block ids of a request, in logical order; empty if it holds none.
  std::span<const int32_t> block_ids(const Request& request) const;
  // The same by id: a linear scan, for tools and tests rather than the step path.
  std::span<const int32_t> block_ids(const std::string& request_id) const;
  // Ids of requests that hold blocks (unordered).
  std::vector<std::string> requests_holding_blocks() const;

  int num_free_blocks() const { return pool_.num_free_blocks(); }
  double usage() const { return pool_.usage(); }
  bool reset_prefix_cache() { return pool_.reset_prefix_cache(); }
  const PrefixCacheStats& prefix_cache_stats() const { return stats_; }
  const BlockPool& pool() const { return pool_; }

 private:
  struct RequestBlocks {
    std::vector<KVCacheBlock*> blocks;
    std::vector<int32_t> ids;
    int num_cached_blocks = 0;
  };

  // Extends request.block_hashes to cover num_full_blocks full blocks.
  void ensure_block_hashes(Request& request, int num_full_blocks) const;

  BlockPool pool_;
  int block_size_;
  int max_model_len_;
  // Keyed by the request object (stable for its lifetime; free() runs before it is destroyed),
  // which keeps string hashing off the per-step path.
  std::unordered_map<const Request*, RequestBlocks> req_blocks_;
  PrefixCacheStats stats_;
  std::vector<KVCacheBlock*> scratch_;
};

}  // namespace pagedllm
