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

TEST(GemmUnits, TheWorkedExampleSplitsTheLastFourGroupsIntoHalves) {
  // 10 groups, blocks of 3, 8 row tiles, 2 threads (the example in work_shares.h).
  const GemmUnits units(10, 8, 3, 2);
  ASSERT_EQ(units.count(), 10);
  const auto expect = [&](int u, int g0, int g1, int rt0, int rt1) {
    const GemmUnits::Unit got = units.at(u);
    EXPECT_EQ(std::vector<int>({got.g0, got.g1, got.rt0, got.rt1}),
              std::vector<int>({g0, g1, rt0, rt1}))
        << "unit " << u;
  };
  expect(0, 0, 3, 0, 8);
  expect(1, 3, 6, 0, 8);
  expect(2, 6, 7, 0, 4);
  expect(3, 6, 7, 4, 8);
  expect(8, 9, 10, 0, 4);
  expect(9, 9, 10, 4, 8);
}

TEST(GemmUnits, EveryGroupAndRowTileIsCoveredOnceForRandomShapes) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int groups = std::uniform_int_distribution<int>(1, 60)(rng);
    const int row_tiles = std::uniform_int_distribution<int>(1, 40)(rng);
    const int block = std::uniform_int_distribution<int>(1, 4)(rng);
    const int threads = std::uniform_int_distribution<int>(1, 8)(rng);
    const GemmUnits units(groups, row_tiles, block, threads);
    std::vector<int> seen(static_cast<size_t>(groups * row_tiles), 0);
    int last_g0 = -1;
    for (int u = 0; u < units.count(); ++u) {
      const GemmUnits::Unit unit = units.at(u);
      ASSERT_LE(unit.g1 - unit.g0, block);
      ASSERT_GE(unit.g0, last_g0);  // groups in order, so a thread's weight stream runs forward
      last_g0 = unit.g0;
      for (int g = unit.g0; g < unit.g1; ++g) {
        for (int rt = unit.rt0; rt < unit.rt1; ++rt)
          ++seen[static_cast<size_t>(g * row_tiles + rt)];
      }
    }
    for (int v : seen)
      ASSERT_EQ(v, 1) << groups << " " << row_tiles << " " << block << " " << threads;
    // The tail: the last min(groups, 2 * threads) groups are single, halved past 8 row tiles.
    const int tail = std::min(groups, 2 * threads);
    const GemmUnits::Unit last = units.at(units.count() - 1);
    EXPECT_EQ(last.g1 - last.g0, 1);
    EXPECT_EQ(last.rt1 - last.rt0,
              row_tiles >= GemmUnits::kSplitMinRowTiles ? row_tiles - row_tiles / 2 : row_tiles);
    EXPECT_GE(units.count(), tail);
  }
}

}  // namespace
}  // namespace pagedllm::cpu
