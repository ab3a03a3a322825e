#include "kernels/cpu/work_shares.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

namespace pagedllm::cpu {
namespace {

TEST(WorkShares, OneThreadTakesEveryItemInOrder) {
  WorkShares shares(5, 1);
  std::vector<int> got;
  for (int i = shares.next(0); i >= 0; i = shares.next(0)) got.push_back(i);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(WorkShares, ThreadDoneEarlyTakesFromTheBackOfTheLargestShare) {
  // 10 items over 2 threads: shares [0, 5) and [5, 10).
  WorkShares shares(10, 2);
  EXPECT_EQ(shares.next(0), 0);
  for (int i = 5; i < 10; ++i) EXPECT_EQ(shares.next(1), i);
  // Thread 1's share is done: it takes 4, then 3, from thread 0's back.
  EXPECT_EQ(shares.next(1), 4);
  EXPECT_EQ(shares.next(1), 3);
  EXPECT_EQ(shares.next(0), 1);
  EXPECT_EQ(shares.next(0), 2);
  EXPECT_EQ(shares.next(0), -1);
  EXPECT_EQ(shares.next(1), -1);
}

TEST(WorkShares, ThreadCountIsClampedAndEmptySharesAreFine) {
  EXPECT_EQ(WorkShares(3, 0).threads(), 1);
  EXPECT_EQ(WorkShares(3, 1000).threads(), WorkShares::kMaxThreads);
  WorkShares shares(2, 4);  // two threads have empty shares and steal
  std::vector<int> got;
  for (int i = shares.next(3); i >= 0; i = shares.next(3)) got.push_back(i);
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(shares.next(0), -1);
}

// Concurrent threads, each slowed at random: every item is handed out exactly once, and each
// thread's items from its own share come front to back from the share's start.
TEST(WorkShares, ConcurrentThreadsTakeEveryItemExactlyOnce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int items = static_cast<int>(rng() % 400);
    const int threads = 1 + static_cast<int>(rng() % 6);
    WorkShares shares(items, threads);
    std::vector<std::vector<int>> taken(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t, seed = rng()] {
        std::mt19937 local(seed);
        for (int i = shares.next(t); i >= 0; i = shares.next(t)) {
          taken[t].push_back(i);
          if (local() % 8 == 0) std::this_thread::yield();
        }
      });
    }
    for (auto& th : pool) th.join();
    std::vector<int> count(items, 0);
    for (int t = 0; t < threads; ++t) {
      const int begin = items * t / threads, end = items * (t + 1) / threads;
      int own = begin;  // the next item of its own share it should have taken
      for (int i : taken[t]) {
        ASSERT_GE(i, 0);
        ASSERT_LT(i, items);
        ++count[i];
        if (i >= begin && i < end) {
          ASSERT_EQ(i, own++) << "thread " << t << " trial " << trial;
        }
      }
    }
    for (int i = 0; i < items; ++i) ASSERT_EQ(count[i], 1) << "item " << i << " trial " << trial;
  }
}

}  // namespace
}  // namespace pagedllm::cpu
