// MXCSR's flush-to-zero and denormals-are-zero for a scope: how the products without
// vdpbf16ps repeat its flushing (bf16 tiles in gemm.h, bf16 caches in paged attention).
#pragma once

#include <xmmintrin.h>

namespace pagedllm::cpu {

// Set for this thread for the scope's lifetime. A scope that finds them set already changes
// nothing, so gemm_packed sets them once per thread and call rather than once per tile.
class FlushDenormals {
 public:
  explicit FlushDenormals(bool enable = true) : saved_(_mm_getcsr()) {
    changed_ = enable && (saved_ & kBoth) != kBoth;
    if (changed_) _mm_setcsr(saved_ | kBoth);
  }
  ~FlushDenormals() {
    if (changed_) _mm_setcsr(saved_);
  }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  static constexpr unsigned kBoth = 0x8000 | 0x40;  // FTZ | DAZ
  unsigned saved_;
  bool changed_;
};

}  // namespace pagedllm::cpu
