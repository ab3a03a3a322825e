#include "core/kv_cache_manager.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

namespace pagedllm {

namespace {

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

}  // namespace

KVCacheManager::KVCacheManager(int num_blocks, int block_size, int max_model_len,
                               bool enable_caching)
    : pool_(num_blocks, enable_caching), block_size_(block_size), max_model_len_(max_model_len) {
  if (block_size <= 0) throw std::invalid_argument("block_size must be positive");
  // Every request that holds blocks holds at least one.
  req_blocks_.reserve(static_cast<size_t>(std::min(num_blocks, 1 << 16)));
}

void KVCacheManager::ensure_block_hashes(Request& request, int num_full_blocks) const {
  auto& hashes = request.block_hashes;
  const auto tokens = request.all_token_ids();
  while (static_cast<int>(hashes.size()) < num_full_blocks) {
    const size_t i = hashes.size();
    std::optional<BlockHash> parent;
    if (i > 0) parent = hashes[i - 1];
    const auto block_tokens =
        tokens.subspan(i * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_));
    const std::string_view salt = i == 0 ? std::string_view(request.cache_salt) : "";
    if (request.mm_features.empty()) {
      hashes.push_back(hash_block_tokens(parent, block_tokens, salt));
      continue;
    }
    // vLLM's multimodal extra keys: the identifier of every image with a placeholder in this
    // block, so equal pad tokens of different images never share KV.
    std::string extra(salt);
    const int64_t start = static_cast<int64_t>(i) * block_size_;
    for (const MultiModalFeature& f : request.mm_features) {
      if (f.offset >= start + block_size_) break;
      if (f.end() > start) extra += f.identifier;
    }
    hashes.push_back(hash_block_tokens(parent, block_tokens, extra));
  }
}

ComputedBlocks KVCacheManager::get_computed_blocks(Request& request) {
  ComputedBlocks result;
  if (!pool_.caching_enabled()) return result;
  const int max_hit_blocks = (request.num_tokens() - 1) / block_size_;
  ensure_block_hashes(request, request.num_tokens() / block_size_);
  for (int i = 0; i < max_hit_blocks; ++i) {
    KVCacheBlock* block = pool_.get_cached_block(request.block_hashes[static_cast<size_t>(i)]);
    if (!block) break;
    result.blocks.push_back(block);
  }
  result.num_tokens = static_cast<int>(result.blocks.size()) * block_size_;
  stats_.requests += 1;
  stats_.queries += request.num_tokens();
  stats_.hits += result.num_tokens;
  return result;
}

bool KVCacheManager::allocate_slots(Request& request, int num_new_tokens,
                                    const ComputedBlocks* computed,
                                    std::vector<int32_t>& new_block_ids, int num_draft_tokens) {
  if (num_new_tokens <= 0) throw std::invalid_argument("allocate_slots needs new tokens");
  RequestBlocks& rb = req_blocks_[&request];
  const int num_hit_blocks = computed ? static_cast<int>(computed->blocks.size()) : 0;
  const int num_hit_tokens = computed ? computed->num_tokens : 0;
  const int num_computed = request.num_computed_tokens + num_hit_tokens;
  const int tokens_needing_slots = std::min(num_computed + num_new_tokens, max_model_len_);
  const int num_required = ceil_div(tokens_needing_slots, block_size_);
  const int num_new_blocks =
      std::max(0, num_required - static_cast<int>(rb.blocks.size()) - num_hit_blocks);

  // A hit block that sits in the free queue is counted as free; touching it takes it out.
  int num_evictable_hits = 0;
  for (int i = 0; i < num_hit_blocks; ++i) {
    if (computed->blocks[static_cast<size_t>(i)]->ref_cnt == 0) ++num_evictable_hits;
  }
  if (num_new_blocks > pool_.num_free_blocks() - num_evictable_hits) {
    if (rb.blocks.empty()) req_blocks_.erase(&request);
    return false;
  }

  if (num_hit_blocks > 0) {
    pool_.touch(computed->blocks);
    for (KVCacheBlock* b : computed->blocks) {
      rb.blocks.push_back(b);
      rb.ids.push_back(b->block_id);
    }
    rb.num_cached_blocks = static_cast<int>(rb.blocks.size());
  }
  scratch_.clear();
  const bool ok = pool_.get_new_blocks(num_new_blocks, scratch_);
  assert(ok);
  (void)ok;
  for (KVCacheBlock* b : scratch_) {
    rb.blocks.push_back(b);
    rb.ids.push_back(b->block_id);
    new_block_ids.push_back(b->block_id);
  }

  if (pool_.caching_enabled()) {
    // Blocks that are full once this step's tokens are computed become findable now.
    const int num_full = (num_computed + num_new_tokens - num_draft_tokens) / block_size_;
    if (num_full > rb.num_cached_blocks) {
      ensure_block_hashes(request, num_full);
      pool_.cache_full_blocks(rb.blocks, request.block_hashes, rb.num_cached_blocks, num_full);
      rb.num_cached_blocks = num_full;
    }
  }
  return true;
}

void KVCacheManager::free(const Request& request) {
  auto it = req_blocks_.find(&request);
  if (it == req_blocks_.end()) return;
  auto& blocks = it->second.blocks;
  std::reverse(blocks.begin(), blocks.end());
  pool_.free_blocks(blocks);
  req_blocks_.erase(it);
}

std::span<const int32_t> KVCacheManager::block_ids(const Request& request) const {
  auto it = req_blocks_.find(&request);
  if (it == req_blocks_.end()) return {};
  return it->second.ids;
}

std::span<const int32_t> KVCacheManager::block_ids(const std::string& request_id) const {
  for (const auto& [request, rb] : req_blocks_) {
    if (request->id() == request_id) return rb.ids;
  }
  return {};
}

std::vector<std::string> KVCacheManager::requests_holding_blocks() const {
  std::vector<std::string> ids;
  ids.reserve(req_blocks_.size());
  for (const auto& [request, rb] : req_blocks_) {
    if (!rb.blocks.empty()) ids.push_back(request->id());
  }
  return ids;
}

}  // namespace pagedllm
