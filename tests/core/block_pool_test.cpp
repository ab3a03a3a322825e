#include "core/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

Ids ids_of(const std::vector<KVCacheBlock*>& blocks) {
  Ids ids;
  for (const auto* b : blocks) ids.push_back(b->block_id);
  return ids;
}

TEST(BlockPool, NullBlockIsReservedSoElevenBlocksGiveTenUsable) {
  BlockPool pool(11, true);
  EXPECT_EQ(pool.num_free_blocks(), 10);
  EXPECT_TRUE(pool.block(0).is_null);
  EXPECT_EQ(pool.free_block_ids(), (Ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  std::vector<KVCacheBlock*> got;
  ASSERT_TRUE(pool.get_new_blocks(10, got));
  for (auto* b : got) EXPECT_NE(b->block_id, 0);
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_DOUBLE_EQ(pool.usage(), 1.0);
}

TEST(BlockPool, HandsOutFromTheFrontAndTakesFreedBlocksAtTheBack) {
  BlockPool pool(6, true);
  std::vector<KVCacheBlock*> a;
  ASSERT_TRUE(pool.get_new_blocks(3, a));
  EXPECT_EQ(ids_of(a), (Ids{1, 2, 3}));
  EXPECT_EQ(pool.free_block_ids(), (Ids{4, 5}));
  pool.free_blocks(std::vector<KVCacheBlock*>{a[2], a[0]});
  EXPECT_EQ(pool.free_block_ids(), (Ids{4, 5, 3, 1}));
  std::vector<KVCacheBlock*> b;
  ASSERT_TRUE(pool.get_new_blocks(3, b));
  EXPECT_EQ(ids_of(b), (Ids{4, 5, 3}));
  EXPECT_EQ(a[1]->ref_cnt, 1);
}

TEST(BlockPool, FailedAllocationChangesNothing) {
  BlockPool pool(4, true);
  std::vector<KVCacheBlock*> got;
  EXPECT_FALSE(pool.get_new_blocks(4, got));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(pool.free_block_ids(), (Ids{1, 2, 3}));
  for (int i = 1; i < 4; ++i) EXPECT_EQ(pool.block(i).ref_cnt, 0);
}

TEST(BlockPool, TouchRemovesAFreeBlockFromTheMiddleOfTheQueue) {
  BlockPool pool(6, true);
  KVCacheBlock* b3 = &pool.block(3);
  pool.touch(std::vector<KVCacheBlock*>{b3});
  EXPECT_EQ(b3->ref_cnt, 1);
  EXPECT_EQ(pool.free_block_ids(), (Ids{1, 2, 4, 5}));
  pool.touch(std::vector<KVCacheBlock*>{b3});
  EXPECT_EQ(b3->ref_cnt, 2);
  pool.free_blocks(std::vector<KVCacheBlock*>{b3});
  EXPECT_EQ(pool.free_block_ids(), (Ids{1, 2, 4, 5}));
  pool.free_blocks(std::vector<KVCacheBlock*>{b3});
  EXPECT_EQ(pool.free_block_ids(), (Ids{1, 2, 4, 5, 3}));
}

TEST(BlockPool, FreedBlockKeepsItsHashUntilHandedOutAgain) {
  BlockPool pool(3, true);
  std::vector<KVCacheBlock*> got;
  ASSERT_TRUE(pool.get_new_blocks(1, got));
  const Ids tokens = {1, 2, 3, 4};
  const BlockHash h = hash_block_tokens(std::nullopt, tokens);
  pool.cache_full_blocks(got, std::vector<BlockHash>{h}, 0, 1);
  pool.free_blocks(got);
  EXPECT_EQ(pool.get_cached_block(h), got[0]);  // still findable while free
  std::vector<KVCacheBlock*> again;
  ASSERT_TRUE(pool.get_new_blocks(2, again));  // block 2 first, then block 1 is evicted
  EXPECT_EQ(ids_of(again), (Ids{2, 1}));
  EXPECT_EQ(pool.get_cached_block(h), nullptr);
  EXPECT_FALSE(got[0]->block_hash.has_value());
}

TEST(BlockPool, ResetPrefixCacheIsRefusedWhileBlocksAreInUse) {
  BlockPool pool(4, true);
  std::vector<KVCacheBlock*> got;
  ASSERT_TRUE(pool.get_new_blocks(1, got));
  const BlockHash h = hash_block_tokens(std::nullopt, Ids{9});
  pool.cache_full_blocks(got, std::vector<BlockHash>{h}, 0, 1);
  EXPECT_FALSE(pool.reset_prefix_cache());
  EXPECT_NE(pool.get_cached_block(h), nullptr);
  pool.free_blocks(got);
  EXPECT_TRUE(pool.reset_prefix_cache());
  EXPECT_EQ(pool.get_cached_block(h), nullptr);
  EXPECT_EQ(pool.num_cached_hashes(), 0u);
}

TEST(BlockHash, ChainsParentTokensAndExtraKey) {
  const Ids a = {1, 2, 3, 4};
  const BlockHash h1 = hash_block_tokens(std::nullopt, a);
  EXPECT_EQ(h1, hash_block_tokens(std::nullopt, a));
  EXPECT_NE(h1, hash_block_tokens(std::nullopt, Ids{1, 2, 3, 5}));
  EXPECT_NE(h1, hash_block_tokens(std::nullopt, a, "salt"));
  const BlockHash child = hash_block_tokens(h1, a);
  EXPECT_NE(child, h1);
  EXPECT_NE(child, hash_block_tokens(hash_block_tokens(std::nullopt, Ids{0, 2, 3, 4}), a));
}

}  // namespace
}  // namespace pagedllm
