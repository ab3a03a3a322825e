// Items [0, n) split into one contiguous share per thread. Each thread takes its own share front
// to back, so that its weight stream stays sequential for the prefetchers; a thread whose share
// is done takes single items from the back of the share with the most left. Decode's products
// want this: a static split leaves the faster thread spinning at the barrier whenever the other
// core is slowed (a shared host, one thread's DRAM stream falling behind), and a fully dynamic
// one breaks the streams.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

namespace pagedllm::cpu {

class WorkShares {
 public:
  static constexpr int kMaxThreads = 256;  // a team past it runs with this many

  // Shares for min(threads, kMaxThreads) threads (threads >= 1); items < 2^31.
  WorkShares(int items, int threads) : threads_(std::clamp(threads, 1, kMaxThreads)) {
    for (int t = 0; t < threads_; ++t) {
      const int64_t begin = static_cast<int64_t>(items) * t / threads_;
      const int64_t end = static_cast<int64_t>(items) * (t + 1) / threads_;
      // Plain stores: the threads that take items start after the constructor (OpenMP's fork).
      shares_[t].range = pack(static_cast<uint32_t>(begin), static_cast<uint32_t>(end));
    }
  }
  int threads() const { return threads_; }

  // The next item for thread t (t < threads()), or -1 when no share has any left.
  int next(int t) {
    const int own = take_front(shares_[t].range);
    if (own >= 0) return own;
    while (true) {
      int victim = -1;
      uint32_t most = 0;
      for (int v = 0; v < threads_; ++v) {
        const uint64_t r = std::atomic_ref(shares_[v].range).load(std::memory_order_relaxed);
        if (end_of(r) > begin_of(r) && end_of(r) - begin_of(r) > most) {
          most = end_of(r) - begin_of(r);
          victim = v;
        }
      }
      if (victim < 0) return -1;
      const int stolen = take_back(shares_[victim].range);
      if (stolen >= 0) return stolen;
    }
  }

 private:
  static uint64_t pack(uint32_t begin, uint32_t end) {
    return static_cast<uint64_t>(begin) | static_cast<uint64_t>(end) << 32;
  }
  static uint32_t begin_of(uint64_t r) { return static_cast<uint32_t>(r); }
  static uint32_t end_of(uint64_t r) { return static_cast<uint32_t>(r >> 32); }

  static int take_front(uint64_t& stored) {
    std::atomic_ref range(stored);
    uint64_t r = range.load(std::memory_order_relaxed);
    while (begin_of(r) < end_of(r)) {
      if (range.compare_exchange_weak(r, pack(begin_of(r) + 1, end_of(r)),
                                      std::memory_order_relaxed))
        return static_cast<int>(begin_of(r));
    }
    return -1;
  }
  static int take_back(uint64_t& stored) {
    std::atomic_ref range(stored);
    uint64_t r = range.load(std::memory_order_relaxed);
    while (begin_of(r) < end_of(r)) {
      if (range.compare_exchange_weak(r, pack(begin_of(r), end_of(r) - 1),
                                      std::memory_order_relaxed))
        return static_cast<int>(end_of(r) - 1);
    }
    return -1;
  }

  // One cache line per share: the owner's claims do not contend with the others'. Plain words
  // taken through std::atomic_ref, so that only the threads_ shares in use are written (the
  // array is 16 KB, and decode builds one per product).
  struct alignas(64) Share {
    uint64_t range;  // begin | end << 32
  };
  int threads_;
  std::array<Share, kMaxThreads> shares_;
};

// The units a batch's threads claim one at a time: blocks of `block` panel groups over all row
// tiles, then single groups, and last 2 per thread of those split into halves of the row tiles
// when there are kSplitMinRowTiles or more, so that the threads finish within half a group's
// work of each other (llama-110m q8_0 pp512, 2 threads: the o and down projections are 24
// groups, and a whole group at the end left one thread waiting for up to 4 % of them).
// Worked example: 10 groups, block 3, 8 row tiles, 2 threads: 4 groups go to the tail, 6 form
// 2 blocks, and the tail is 8 half groups; units 0-1 are groups [0, 3) and [3, 6), unit 2 is
// group 6's row tiles [0, 4) and unit 3 its [4, 8), ..., unit 9 group 9's [4, 8).
class GemmUnits {
 public:
  static constexpr int kSplitMinRowTiles = 8;
  struct Unit {
    int g0 = 0, g1 = 0, rt0 = 0, rt1 = 0;
  };
  GemmUnits(int groups, int row_tiles, int block, int threads)
      : row_tiles_(row_tiles), block_(block) {
    const int tail = std::min(groups, 2 * threads);
    blocks_ = (groups - tail) / block;
    split_ = row_tiles >= kSplitMinRowTiles ? 2 : 1;
    whole_singles_ = groups - blocks_ * block - tail;
    count_ = blocks_ + whole_singles_ + tail * split_;
  }
  int count() const { return count_; }
  Unit at(int u) const {
    if (u < blocks_) return {block_ * u, block_ * (u + 1), 0, row_tiles_};
    const int first_single = blocks_ * block_;
    u -= blocks_;
    if (u < whole_singles_) return {first_single + u, first_single + u + 1, 0, row_tiles_};
    u -= whole_singles_;
    const int g = first_single + whole_singles_ + u / split_, part = u % split_;
    return {g, g + 1, row_tiles_ * part / split_, row_tiles_ * (part + 1) / split_};
  }

 private:
  int row_tiles_, block_, blocks_ = 0, split_ = 1, whole_singles_ = 0, count_ = 0;
};

}  // namespace pagedllm::cpu
