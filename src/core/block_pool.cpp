#include "core/block_pool.h"

#include <cassert>
#include <stdexcept>

namespace pagedllm {

FreeBlockQueue::FreeBlockQueue(std::span<KVCacheBlock> blocks) {
  head_.next_free = &tail_;
  tail_.prev_free = &head_;
  for (auto& b : blocks) push_back(&b);
}

KVCacheBlock* FreeBlockQueue::pop_front() {
  if (size_ == 0) return nullptr;
  KVCacheBlock* block = head_.next_free;
  remove(block);
  return block;
}

void FreeBlockQueue::remove(KVCacheBlock* block) {
  assert(block->prev_free && block->next_free);
  block->prev_free->next_free = block->next_free;
  block->next_free->prev_free = block->prev_free;
  block->prev_free = block->next_free = nullptr;
  --size_;
}

void FreeBlockQueue::push_back(KVCacheBlock* block) {
  assert(!block->prev_free && !block->next_free);
  block->prev_free = tail_.prev_free;
  block->next_free = &tail_;
  tail_.prev_free->next_free = block;
  tail_.prev_free = block;
  ++size_;
}

std::vector<int32_t> FreeBlockQueue::ids() const {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(size_));
  for (const KVCacheBlock* b = head_.next_free; b != &tail_; b = b->next_free) {
    out.push_back(b->block_id);
  }
  return out;
}

namespace {

std::vector<KVCacheBlock> make_blocks(int num_blocks) {
  if (num_blocks < 2) throw std::invalid_argument("a block pool needs at least 2 blocks");
  std::vector<KVCacheBlock> blocks(static_cast<size_t>(num_blocks));
  for (int i = 0; i < num_blocks; ++i) blocks[static_cast<size_t>(i)].block_id = i;
  return blocks;
}

}  // namespace

BlockPool::BlockPool(int num_blocks, bool enable_caching)
    : blocks_(make_blocks(num_blocks)), free_queue_(blocks_), enable_caching_(enable_caching) {
  KVCacheBlock* null_block = free_queue_.pop_front();
  null_block->is_null = true;
  if (enable_caching_) cached_.reserve(static_cast<size_t>(num_blocks));
}

double BlockPool::usage() const {
  const int usable = num_blocks() - 1;
  return 1.0 - static_cast<double>(num_free_blocks()) / usable;
}

bool BlockPool::get_new_blocks(int n, std::vector<KVCacheBlock*>& out) {
  if (n < 0 || n > num_free_blocks()) return false;
  for (int i = 0; i < n; ++i) {
    KVCacheBlock* block = free_queue_.pop_front();
    assert(block->ref_cnt == 0);
    evict_cached_hash(block);
    block->ref_cnt = 1;
    out.push_back(block);
  }
  return true;
}

void BlockPool::evict_cached_hash(KVCacheBlock* block) {
  if (!block->block_hash) return;
  auto it = cached_.find(*block->block_hash);
  if (it != cached_.end()) {
    if (it->second == block) {
      if (block->next_same_hash) {
        it->second = block->next_same_hash;
      } else {
        cached_.erase(it);
      }
    } else {
      KVCacheBlock* prev = it->second;
      while (prev->next_same_hash && prev->next_same_hash != block) prev = prev->next_same_hash;
      if (prev->next_same_hash == block) prev->next_same_hash = block->next_same_hash;
    }
  }
  block->next_same_hash = nullptr;
  block->block_hash.reset();
}

void BlockPool::touch(std::span<KVCacheBlock* const> blocks) {
  for (KVCacheBlock* block : blocks) {
    if (block->ref_cnt == 0 && !block->is_null) free_queue_.remove(block);
    ++block->ref_cnt;
  }
}

void BlockPool::free_blocks(std::span<KVCacheBlock* const> blocks) {
  for (KVCacheBlock* block : blocks) {
    if (block->is_null) continue;
    assert(block->ref_cnt > 0);
    if (--block->ref_cnt == 0) free_queue_.push_back(block);
  }
}

KVCacheBlock* BlockPool::get_cached_block(const BlockHash& hash) const {
  auto it = cached_.find(hash);
  return it == cached_.end() ? nullptr : it->second;
}

void BlockPool::cache_full_blocks(std::span<KVCacheBlock* const> blocks,
                                  std::span<const BlockHash> block_hashes, int num_cached,
                                  int num_full) {
  if (!enable_caching_) return;
  assert(num_full <= static_cast<int>(block_hashes.size()));
  for (int i = num_cached; i < num_full; ++i) {
    KVCacheBlock* block = blocks[static_cast<size_t>(i)];
    // A prefix-hit block already carries this hash.
    if (block->block_hash) continue;
    const BlockHash& hash = block_hashes[static_cast<size_t>(i)];
    block->block_hash = hash;
    auto [it, inserted] = cached_.try_emplace(hash, block);
    if (!inserted) {
      // Append, so that lookups keep returning the block that was cached first (as vLLM).
      KVCacheBlock* tail = it->second;
      while (tail->next_same_hash) tail = tail->next_same_hash;
      tail->next_same_hash = block;
    }
  }
}

bool BlockPool::reset_prefix_cache() {
  if (num_free_blocks() != num_blocks() - 1) return false;
  cached_.clear();
  for (auto& b : blocks_) {
    b.block_hash.reset();
    b.next_same_hash = nullptr;
  }
  return true;
}

}  // namespace pagedllm
