#include "core/encoder_cache_manager.h"

#include <gtest/gtest.h>

#include <memory>

namespace pagedllm {
namespace {

// A request whose prompt holds the given images (identifier, length), one after another.
std::unique_ptr<Request> with_images(const std::string& id,
                                     std::vector<std::pair<std::string, int>> images) {
  int64_t offset = 1;
  std::vector<MultiModalFeature> features;
  for (const auto& [name, length] : images) {
    features.push_back({name, offset, length, std::make_shared<EncoderInput>()});
    offset += length + 2;
  }
  auto r = std::make_unique<Request>(id, std::vector<int32_t>(static_cast<size_t>(offset), 1),
                                     SamplingParams{});
  r->mm_features = std::move(features);
  return r;
}

TEST(EncoderCacheManager, TheHeaderWorkedExampleEvictsTheUnreferencedImageForANewOne) {
  EncoderCacheManager cache(10);
  auto a = with_images("A", {{"x", 6}});
  auto b = with_images("B", {{"y", 5}});
  ASSERT_FALSE(cache.check_and_update_cache(*a, 0));
  ASSERT_TRUE(cache.can_allocate(6, 100, 0));
  cache.allocate(*a, 0);
  EXPECT_EQ(cache.num_free_slots(), 4);
  EXPECT_EQ(cache.num_freeable_slots(), 4);
  EXPECT_DOUBLE_EQ(cache.usage(), 0.6);
  cache.free_input(*a, 0);
  EXPECT_EQ(cache.num_free_slots(), 4);
  EXPECT_EQ(cache.num_freeable_slots(), 10);
  EXPECT_TRUE(cache.is_cached("x"));  // still there for a request with the same image
  ASSERT_FALSE(cache.check_and_update_cache(*b, 0));
  ASSERT_TRUE(cache.can_allocate(5, 100, 0));
  EXPECT_EQ(cache.take_freed(), std::vector<std::string>{"x"});
  EXPECT_TRUE(cache.take_freed().empty());
  cache.allocate(*b, 0);
  EXPECT_EQ(cache.num_free_slots(), 5);
  EXPECT_FALSE(cache.is_cached("x"));
}

TEST(EncoderCacheManager, ASecondRequestWithTheSameImageSharesItsEntryUntilBothAreDone) {
  EncoderCacheManager cache(8);
  auto a = with_images("A", {{"x", 6}});
  auto b = with_images("B", {{"x", 6}});
  ASSERT_TRUE(cache.can_allocate(6, 8, 0));
  cache.allocate(*a, 0);
  EXPECT_TRUE(cache.check_and_update_cache(*b, 0));
  EXPECT_TRUE(cache.holds(*b, 0));
  cache.free(*a);
  EXPECT_EQ(cache.num_freeable_slots(), 2);  // B still references x
  EXPECT_FALSE(cache.can_allocate(3, 8, 0));
  cache.free(*b);
  EXPECT_EQ(cache.num_freeable_slots(), 8);
  cache.free(*b);  // freeing twice changes nothing
  EXPECT_EQ(cache.num_freeable_slots(), 8);
}

TEST(EncoderCacheManager, AFreeableEntryReferencedAgainIsNoLongerEvictable) {
  EncoderCacheManager cache(10);
  auto a = with_images("A", {{"x", 6}});
  auto c = with_images("C", {{"x", 6}});
  ASSERT_TRUE(cache.can_allocate(6, 10, 0));
  cache.allocate(*a, 0);
  cache.free(*a);
  EXPECT_TRUE(cache.check_and_update_cache(*c, 0));
  EXPECT_EQ(cache.num_freeable_slots(), 4);
  EXPECT_FALSE(cache.can_allocate(5, 10, 0));
  EXPECT_TRUE(cache.take_freed().empty());
}

TEST(EncoderCacheManager, TheStepBudgetAndTokensAlreadyChosenCount) {
  EncoderCacheManager cache(10);
  EXPECT_FALSE(cache.can_allocate(6, 5, 0));  // over this step's encoder budget
  EXPECT_TRUE(cache.can_allocate(6, 6, 4));   // 6 + 4 pending fill the cache exactly
  EXPECT_FALSE(cache.can_allocate(6, 6, 5));
}

}  // namespace
}  // namespace pagedllm
