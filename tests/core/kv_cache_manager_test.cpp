#include "core/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

Request request_of_tokens(const std::string& id, int num_tokens, int first_token = 0) {
  Ids prompt(static_cast<size_t>(num_tokens));
  std::iota(prompt.begin(), prompt.end(), first_token);
  SamplingParams p;
  p.max_tokens = 1;
  return Request(id, prompt, p);
}

// Schedules the whole prompt at once, as a new request would be.
Ids admit(KVCacheManager& kv, Request& r) {
  ComputedBlocks hit = kv.get_computed_blocks(r);
  Ids new_ids;
  EXPECT_TRUE(kv.allocate_slots(r, r.num_tokens() - hit.num_tokens, &hit, new_ids));
  r.num_computed_tokens = r.num_tokens();
  return new_ids;
}

TEST(KVCacheManager, AllocatesCeilOfTokensOverBlockSize) {
  KVCacheManager kv(20, 4, 64, false);
  Request r = request_of_tokens("a", 9);
  Ids ids;
  ASSERT_TRUE(kv.allocate_slots(r, 9, nullptr, ids));
  EXPECT_EQ(ids, (Ids{1, 2, 3}));
  r.num_computed_tokens = 9;
  ids.clear();
  ASSERT_TRUE(kv.allocate_slots(r, 3, nullptr, ids));  // 12 tokens still fit in 3 blocks
  EXPECT_TRUE(ids.empty());
  r.num_computed_tokens = 12;
  ASSERT_TRUE(kv.allocate_slots(r, 1, nullptr, ids));
  EXPECT_EQ(ids, (Ids{4}));
  EXPECT_EQ(Ids(kv.block_ids("a").begin(), kv.block_ids("a").end()), (Ids{1, 2, 3, 4}));
}

TEST(KVCacheManager, FailedAllocationLeavesEverythingUntouched) {
  KVCacheManager kv(5, 4, 64, true);
  Request a = request_of_tokens("a", 12);
  admit(kv, a);
  Request b = request_of_tokens("b", 8, 100);
  const auto free_before = kv.pool().free_block_ids();
  ComputedBlocks hit = kv.get_computed_blocks(b);
  Ids ids;
  EXPECT_FALSE(kv.allocate_slots(b, 8, &hit, ids));
  EXPECT_TRUE(ids.empty());
  EXPECT_EQ(kv.pool().free_block_ids(), free_before);
  EXPECT_TRUE(kv.block_ids("b").empty());
}

TEST(KVCacheManager, PrefixHitIsBlockAlignedAndLeavesTheLastTokenToCompute) {
  KVCacheManager kv(20, 16, 256, true);
  Request a = request_of_tokens("a", 32);
  admit(kv, a);
  // Same 32 tokens: both blocks are cached, but the hit stops at 16 so that token 31 is
  // computed again and yields logits.
  Request b = request_of_tokens("b", 32);
  ComputedBlocks hit = kv.get_computed_blocks(b);
  EXPECT_EQ(hit.num_tokens, 16);
  ASSERT_EQ(hit.blocks.size(), 1u);
  EXPECT_EQ(hit.blocks[0]->block_id, kv.block_ids("a")[0]);
  // 33 tokens with the same first 32: both blocks hit.
  Request c = request_of_tokens("c", 33);
  EXPECT_EQ(kv.get_computed_blocks(c).num_tokens, 32);
  // 31 tokens: only one full block exists in the prompt.
  Request d = request_of_tokens("d", 31);
  EXPECT_EQ(kv.get_computed_blocks(d).num_tokens, 16);
  const auto& stats = kv.prefix_cache_stats();
  EXPECT_EQ(stats.requests, 4);
  EXPECT_EQ(stats.queries, 32 + 32 + 33 + 31);
  EXPECT_EQ(stats.hits, 0 + 16 + 32 + 16);
}

TEST(KVCacheManager, SharedPrefixBlocksAreRefCountedAndTouchedOutOfTheFreeQueue) {
  KVCacheManager kv(10, 4, 64, true);
  Request a = request_of_tokens("a", 9);  // blocks 1, 2 full; 3 partial
  admit(kv, a);
  Request b = request_of_tokens("b", 10);
  const Ids b_new = admit(kv, b);
  EXPECT_EQ(Ids(kv.block_ids("b").begin(), kv.block_ids("b").end()), (Ids{1, 2, 4}));
  EXPECT_EQ(b_new, (Ids{4}));
  EXPECT_EQ(kv.pool().block(1).ref_cnt, 2);
  EXPECT_EQ(kv.pool().block(3).ref_cnt, 1);

  kv.free(a);
  kv.free(b);
  // Each request's blocks were freed tail first: a gives 3, 2, 1; b gives 4 (2 and 1 already
  // in the queue hit zero only with b, so they follow).
  EXPECT_EQ(kv.pool().free_block_ids(), (Ids{5, 6, 7, 8, 9, 3, 4, 2, 1}));

  // A third request reuses the two cached blocks while they sit in the free queue.
  Request c = request_of_tokens("c", 12);
  ComputedBlocks hit = kv.get_computed_blocks(c);
  EXPECT_EQ(hit.num_tokens, 8);
  Ids ids;
  ASSERT_TRUE(kv.allocate_slots(c, 4, &hit, ids));
  EXPECT_EQ(Ids(kv.block_ids("c").begin(), kv.block_ids("c").end()), (Ids{1, 2, 5}));
  EXPECT_EQ(kv.pool().free_block_ids(), (Ids{6, 7, 8, 9, 3, 4}));
}

TEST(KVCacheManager, EvictionTakesTheLeastRecentlyFreedBlocksFirst) {
  KVCacheManager kv(5, 2, 64, true);  // 4 usable blocks
  Request a = request_of_tokens("a", 4, 0);
  admit(kv, a);  // blocks 1, 2
  kv.free(a);    // queue: 3 4 2 1
  Request b = request_of_tokens("b", 6, 50);
  admit(kv, b);  // takes 3, 4, 2: evicts a's second block, keeps its first
  Request a2 = request_of_tokens("a2", 5, 0);
  ComputedBlocks hit = kv.get_computed_blocks(a2);
  EXPECT_EQ(hit.num_tokens, 2);
  ASSERT_EQ(hit.blocks.size(), 1u);
  EXPECT_EQ(hit.blocks[0]->block_id, 1);
}

TEST(KVCacheManager, HitBlocksInTheFreeQueueDoNotCountAsFreeForTheRest) {
  KVCacheManager kv(4, 2, 64, true);  // 3 usable blocks
  Request a = request_of_tokens("a", 4);
  admit(kv, a);
  kv.free(a);                             // blocks 1 and 2 are cached and free: 3 free in all
  Request b = request_of_tokens("b", 7);  // hits 2 blocks, needs 2 more: only 1 is really free
  ComputedBlocks hit = kv.get_computed_blocks(b);
  EXPECT_EQ(hit.num_tokens, 4);
  Ids ids;
  EXPECT_FALSE(kv.allocate_slots(b, 3, &hit, ids));
  EXPECT_EQ(kv.num_free_blocks(), 3);
  EXPECT_EQ(kv.pool().block(1).ref_cnt, 0);
}

TEST(KVCacheManager, CachingOffNeverHits) {
  KVCacheManager kv(10, 4, 64, false);
  Request a = request_of_tokens("a", 8);
  admit(kv, a);
  Request b = request_of_tokens("b", 9);
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 0);
  EXPECT_EQ(kv.pool().num_cached_hashes(), 0u);
}

TEST(KVCacheManager, CacheSaltKeepsEqualPromptsApart) {
  KVCacheManager kv(10, 4, 64, true);
  Request a = request_of_tokens("a", 9);
  a.cache_salt = "tenant-1";
  admit(kv, a);
  Request b = request_of_tokens("b", 9);
  b.cache_salt = "tenant-2";
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 0);
  Request c = request_of_tokens("c", 9);
  c.cache_salt = "tenant-1";
  EXPECT_EQ(kv.get_computed_blocks(c).num_tokens, 8);
}

TEST(KVCacheManager, UsageAndResetPrefixCache) {
  KVCacheManager kv(5, 4, 64, true);
  Request a = request_of_tokens("a", 8);
  admit(kv, a);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.5);
  EXPECT_FALSE(kv.reset_prefix_cache());
  kv.free(a);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.0);
  EXPECT_TRUE(kv.reset_prefix_cache());
  Request b = request_of_tokens("b", 9);
  EXPECT_EQ(kv.get_computed_blocks(b).num_tokens, 0);
}

}  // namespace
}  // namespace pagedllm
