// Software prefetch for the weight streams that decode reads once from DRAM. The hardware
// prefetchers alone leave a stream below the bandwidth, and an L1 prefetch 2 KB ahead alone still
// did (llama-1b q4_k_m tg32 at 78-84 % of the streaming-read probe): it keeps at most the L1's
// fill buffers in flight. A second prefetch into L2, 8 KB ahead, keeps the L2's deeper queue busy
// too (the same, alternating: 30.1-30.9 -> 32.1-34.6 tokens/s; 6 to 16 KB alike, 24 KB less).
#pragma once

#include <xmmintrin.h>

namespace pagedllm::cpu {

inline constexpr int kPrefetchL1Bytes = 2048;
inline constexpr int kPrefetchL2Bytes = 8192;

// Fetches the line kPrefetchL1Bytes past `line` into L1 and the one kPrefetchL2Bytes past it
// into L2. Always inlined: through a plain call g++ 12 dropped it in the AVX2 float tile.
__attribute__((always_inline)) inline void prefetch_stream(const void* line) {
  const char* at = static_cast<const char*>(line);
  _mm_prefetch(at + kPrefetchL1Bytes, _MM_HINT_T0);
  _mm_prefetch(at + kPrefetchL2Bytes, _MM_HINT_T1);
}

}  // namespace pagedllm::cpu
