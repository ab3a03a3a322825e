// The paged KV block pool: ref counts, the free queue and the prefix-cache index.
//
// Block 0 is the null block: taken at start-up, never handed out. Block tables use 0 to mark
// "no block here", so a pool of N blocks has N - 1 usable ones.
//
// Free queue order is the eviction order. It starts in id order, hands out from the front and
// takes freed blocks at the back, so the least recently freed block is reused first. A freed
// block keeps its hash (and stays findable in the prefix cache) until it is handed out again.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/block_hash.h"

namespace pagedllm {

struct KVCacheBlock {
  int32_t block_id = 0;
  int32_t ref_cnt = 0;
  std::optional<BlockHash> block_hash;
  // Intrusive links: valid only while the block sits in the free queue.
  KVCacheBlock* prev_free = nullptr;
  KVCacheBlock* next_free = nullptr;
  // Next block registered under the same hash (several requests may fill equal blocks at once).
  KVCacheBlock* next_same_hash = nullptr;
  bool is_null = false;
};

// Doubly linked list threaded through the blocks themselves: O(1) removal from the middle,
// which is what a prefix-cache hit on a free block needs.
class FreeBlockQueue {
 public:
  explicit FreeBlockQueue(std::span<KVCacheBlock> blocks);
  FreeBlockQueue(const FreeBlockQueue&) = delete;
  FreeBlockQueue& operator=(const FreeBlockQueue&) = delete;

  KVCacheBlock* pop_front();
  void remove(KVCacheBlock* block);
  void push_back(KVCacheBlock* block);
  int size() const { return size_; }
  // Block ids front to back; for tests and tracing.
  std::vector<int32_t> ids() const;

 private:
  KVCacheBlock head_;
  KVCacheBlock tail_;
  int size_ = 0;
};

struct PrefixCacheStats {
  int64_t requests = 0;  // requests that looked up the cache
  int64_t queries = 0;   // tokens looked up
  int64_t hits = 0;      // tokens found
};

class BlockPool {
 public:
  BlockPool(int num_blocks, bool enable_caching);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int num_free_blocks() const { return free_queue_.size(); }
  // Fraction of usable blocks in use, in [0, 1].
  double usage() const;
  bool caching_enabled() const { return enable_caching_; }

  // Hands out n blocks with ref count 1, evicting their cached hashes. All or nothing: returns
  // false and changes nothing when fewer than n blocks are free.
  bool get_new_blocks(int n, std::vector<KVCacheBlock*>& out);
  // Takes a reference on prefix-hit blocks, pulling free ones out of the free queue.
  void touch(std::span<KVCacheBlock* const> blocks);
  // Drops one reference per block; blocks reaching 0 join the back of the free queue in the
  // order given.
  void free_blocks(std::span<KVCacheBlock* const> blocks);

  KVCacheBlock* get_cached_block(const BlockHash& hash) const;
  // Registers blocks [num_cached, num_full) of a request under their chained hashes.
  void cache_full_blocks(std::span<KVCacheBlock* const> blocks,
                         std::span<const BlockHash> block_hashes, int num_cached, int num_full);
  // Forgets every cached hash. Refused (returns false) while any block is in use.
  bool reset_prefix_cache();

  KVCacheBlock& block(int32_t id) { return blocks_[static_cast<size_t>(id)]; }
  const KVCacheBlock& block(int32_t id) const { return blocks_[static_cast<size_t>(id)]; }
  std::vector<int32_t> free_block_ids() const { return free_queue_.ids(); }
  size_t num_cached_hashes() const { return cached_.size(); }

 private:
  void evict_cached_hash(KVCacheBlock* block);

  std::vector<KVCacheBlock> blocks_;
  FreeBlockQueue free_queue_;
  bool enable_caching_;
  // hash -> first block holding it, chained through next_same_hash. Reserved for every block
  // up front so that caching a block never allocates or rehashes.
  std::unordered_map<BlockHash, KVCacheBlock*> cached_;
};

}  // namespace pagedllm
