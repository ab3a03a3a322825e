#include "kernels/cpu/memory_bandwidth.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/stream_prefetch.h"

namespace pagedllm::cpu {

namespace {

constexpr size_t kWordsPerStep = 64;  // 512 bytes: eight cache lines

__attribute__((target("avx512f"))) uint64_t xor_avx512(const uint64_t* p, size_t words) {
  __m512i acc[8];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (size_t i = 0; i + kWordsPerStep <= words; i += kWordsPerStep) {
    for (int j = 0; j < 8; ++j) {
      const char* line = reinterpret_cast<const char*>(p + i + 8 * j);
      prefetch_stream(line);
      acc[j] = _mm512_xor_si512(acc[j], _mm512_load_si512(line));
    }
  }
  for (int j = 1; j < 8; ++j) acc[0] = _mm512_xor_si512(acc[0], acc[j]);
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, acc[0]);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3] ^ lanes[4] ^ lanes[5] ^ lanes[6] ^ lanes[7];
}

// The AVX2 hosts' read: the scalar loop below is bound by its 64 XORs per 512 bytes, not by the
// memory (Zen 3, 2 threads: 20.1 GB/s, where llama-110m f32 decode read its weights at 29.3).
__attribute__((target("avx2"))) uint64_t xor_avx2(const uint64_t* p, size_t words) {
  __m256i acc[4];
  for (auto& a : acc) a = _mm256_setzero_si256();
  for (size_t i = 0; i + kWordsPerStep <= words; i += kWordsPerStep) {
    for (int j = 0; j < 8; ++j) {
      const char* line = reinterpret_cast<const char*>(p + i + 8 * j);
      prefetch_stream(line);
      const __m256i* half = reinterpret_cast<const __m256i*>(line);
      acc[j % 4] = _mm256_xor_si256(
          acc[j % 4], _mm256_xor_si256(_mm256_load_si256(half), _mm256_load_si256(half + 1)));
    }
  }
  const __m256i all =
      _mm256_xor_si256(_mm256_xor_si256(acc[0], acc[1]), _mm256_xor_si256(acc[2], acc[3]));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), all);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

uint64_t xor_generic(const uint64_t* p, size_t words) {
  uint64_t acc[8] = {};
  for (size_t i = 0; i + kWordsPerStep <= words; i += kWordsPerStep) {
    prefetch_stream(p + i);
    for (size_t j = 0; j < kWordsPerStep; ++j) acc[j % 8] ^= p[i + j];
  }
  return acc[0] ^ acc[1] ^ acc[2] ^ acc[3] ^ acc[4] ^ acc[5] ^ acc[6] ^ acc[7];
}

}  // namespace

void ReadBandwidthProbe::FreeDeleter::operator()(void* p) const {
  std::free(p);
}

ReadBandwidthProbe::ReadBandwidthProbe(size_t bytes)
    : words_(std::max<size_t>(bytes / 512, 1) * kWordsPerStep) {
  void* p = std::aligned_alloc(64, words_ * sizeof(uint64_t));
  if (!p) throw std::bad_alloc();
  data_.reset(static_cast<uint64_t*>(p));
  uint64_t* d = data_.get();
  // Touched by the threads that will read it, so its pages sit near them.
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < words_; ++i) d[i] = i;
}

double ReadBandwidthProbe::measure(int passes) const {
  const bool avx512 = cpu_supports(Isa::kAvx512), avx2 = cpu_supports(Isa::kAvx2);
  double best = 0.0;
  uint64_t sink = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel reduction(^ : sink)
    {
      const size_t threads = static_cast<size_t>(omp_get_num_threads());
      const size_t share = words_ / kWordsPerStep / threads * kWordsPerStep;
      const uint64_t* mine = data_.get() + static_cast<size_t>(omp_get_thread_num()) * share;
      sink ^= avx512 ? xor_avx512(mine, share)
              : avx2 ? xor_avx2(mine, share)
                     : xor_generic(mine, share);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(words_ * sizeof(uint64_t)) * 1e-9 / s);
  }
  // Keeps the reads from being optimized away.
  if (sink == 0x5eed) best = std::nextafter(best, 0.0);
  return best;
}

}  // namespace pagedllm::cpu
