// A streaming-read probe of this machine's memory bandwidth right now, for benchmarks that
// report decode speed as a fraction of it. Shared machines drift by 2x within minutes, so a
// ratio is only meaningful against a probe taken in the same run, next to the measurement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace pagedllm::cpu {

class ReadBandwidthProbe {
 public:
  // Allocates and touches `bytes` (far beyond the caches: 512 MiB is plenty).
  explicit ReadBandwidthProbe(size_t bytes = size_t{512} << 20);
  // Reads the buffer `passes` times on the OpenMP threads, with the same 2 KB software
  // prefetch as the decode kernels, and returns the best pass in GB/s.
  double measure(int passes = 2) const;

 private:
  size_t words_;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<uint64_t[], FreeDeleter> data_;
};

}  // namespace pagedllm::cpu
