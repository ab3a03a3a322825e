// Kernel micro-benchmarks, each next to its limit (measured with 2 threads on a 2-vCPU Xeon
// with AMX: 31-32 GB/s streaming read by BM_StreamRead, 479-483 GFLOP/s f32 FMA peak by
// BM_FmaPeakAvx512):
//   GEMM   GFLOP/s (and weight GB/s for M = 1, which is bandwidth bound)
//   attention decode at context 128 / 1k / 4k, prefill attention: GB/s of KV read, GFLOP/s
//   RMSNorm / RoPE / SwiGLU: GB/s
#include <benchmark/benchmark.h>

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "format/dequant.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_onednn.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rope.h"
#include "kernels/kv_cache.h"
#include "model/rope.h"
#include "sampling/sampler.h"
#include "util/aligned_allocator.h"

namespace {

using namespace pagedllm;

// On cache lines, as the model's activations are (llama_model.h).
using Floats = std::vector<float, AlignedAllocator<float>>;

Floats random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.02f);
  Floats v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// args: M, N, K, bf16 (0/1)
void BM_Gemm(benchmark::State& state) {
  const int M = static_cast<int>(state.range(0)), N = static_cast<int>(state.range(1));
  const int K = static_cast<int>(state.range(2));
  // 0 f32, 1 bf16 (vdpbf16ps where the CPU has it), 2 bf16 on the AVX-512F path (f32 FMA, the
  // same bits): the two bf16 rows side by side show what the dot product instruction buys.
  // 3 bf16 through oneDNN's matmul (AMX where the CPU has it; gemm_onednn.h).
  const bool bf16 = state.range(3) != 0, onednn = state.range(3) == 3;
  const cpu::Isa isa =
      state.range(3) == 2 ? std::min(cpu::active_isa(), cpu::Isa::kAvx512Vnni) : cpu::active_isa();
  auto w32 = random_vector(static_cast<size_t>(N) * K, 1);
  std::vector<uint16_t> w16;
  WeightMatrix w{DType::kF32, N, K, w32.data()};
  if (bf16) {
    for (float v : w32) w16.push_back(f32_to_bf16(v));
    w = WeightMatrix{DType::kBF16, N, K, w16.data()};
  }
  const cpu::PackedMatrix packed(w);
  auto x = random_vector(static_cast<size_t>(M) * K, 2);
  Floats y(static_cast<size_t>(M) * N);
  const cpu::MatmulBackend saved = cpu::matmul_backend();
  cpu::set_matmul_backend(onednn ? cpu::MatmulBackend::kOneDnn : cpu::MatmulBackend::kNative);
  if (onednn && !cpu::uses_onednn(packed, M))
    state.SkipWithError("oneDNN does not take this shape");
  for (auto _ : state) {
    if (onednn) {
      cpu::gemm_packed(x.data(), M, packed, y.data());
    } else {
      cpu::gemm_packed(isa, x.data(), M, packed, y.data(), nullptr);
    }
    benchmark::DoNotOptimize(y.data());
  }
  cpu::set_matmul_backend(saved);
  const double flops = 2.0 * M * N * K;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_GB/s"] = benchmark::Counter(static_cast<double>(packed.bytes()) * 1e-9,
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
// llama-110m (K=768: q/k/v/o 768, gate+up 4096, down K=2048) and llama-1b (K=2048: qkv 3072,
// o 2048, gate+up 16384, down K=8192), decode (M=1), batch 32 and prefill (M=512); llama-110m's
// head at batch 32 (N=32000: bf16 weights that stream from DRAM each step).
BENCHMARK(BM_Gemm)
    ->ArgNames({"M", "N", "K", "bf16"})
    ->Args({1, 4096, 768, 0})
    ->Args({1, 4096, 768, 1})
    ->Args({32, 4096, 768, 0})
    ->Args({32, 4096, 768, 1})
    ->Args({512, 4096, 768, 0})
    ->Args({512, 4096, 768, 1})
    ->Args({512, 2304, 768, 0})
    ->Args({512, 768, 2048, 0})
    ->Args({16, 16384, 2048, 0})
    ->Args({32, 16384, 2048, 0})
    ->Args({64, 16384, 2048, 0})
    ->Args({128, 16384, 2048, 0})
    ->Args({512, 3072, 2048, 0})
    ->Args({1, 2048, 8192, 0})
    ->Args({32, 2048, 8192, 0})
    ->Args({512, 2048, 8192, 0})
    ->Args({512, 16384, 2048, 0})
    ->Args({512, 2048, 2048, 0})
    ->Args({1, 16384, 2048, 1})
    ->Args({32, 16384, 2048, 1})
    ->Args({128, 16384, 2048, 1})
    ->Args({1, 2048, 8192, 1})
    ->Args({32, 16384, 2048, 2})
    ->Args({512, 3072, 2048, 1})
    ->Args({512, 3072, 2048, 2})
    ->Args({32, 32000, 768, 1})
    ->Args({32, 4096, 768, 3})
    ->Args({512, 4096, 768, 3})
    ->Args({32, 16384, 2048, 3})
    ->Args({512, 3072, 2048, 3})
    ->Args({512, 16384, 2048, 3})
    ->Args({512, 2048, 8192, 3})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// args: M, N, K, format (0 Q8_0, 1 Q4_K, 2 Q6_K, 3 Q5_K, 4 Q4_0, 5 Q4_1, 6 Q5_0, 7 Q5_1, 8 IQ4_NL,
// 9 Q2_K, 10 Q3_K, 11 IQ4_XS); M = 5 and 6 are verify steps
// of speculative decoding (1 + 4 and 1 + 5 tokens). Counts activation quantization too; rate in
// GOP/s of int8 multiply-adds (2 per weight per row) and packed weight GB/s.
void BM_GemmQuantized(benchmark::State& state) {
  const int M = static_cast<int>(state.range(0)), N = static_cast<int>(state.range(1));
  const int K = static_cast<int>(state.range(2));
  constexpr DType kFormats[] = {DType::kQ8_0,   DType::kQ4_K, DType::kQ6_K, DType::kQ5_K,
                                DType::kQ4_0,   DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                                DType::kIQ4_NL, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS};
  const DType dtype = kFormats[state.range(3)];
  const auto w32 = random_vector(static_cast<size_t>(N) * K, 1);
  std::vector<uint8_t> bytes(row_bytes(dtype, K) * static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) {
    quantize_row(dtype, w32.data() + static_cast<size_t>(r) * K,
                 bytes.data() + static_cast<size_t>(r) * row_bytes(dtype, K), K);
  }
  const cpu::PackedMatrix packed(WeightMatrix{dtype, N, K, bytes.data()});
  auto x = random_vector(static_cast<size_t>(M) * K, 2);
  Floats y(static_cast<size_t>(M) * N);
  for (auto _ : state) {
    cpu::gemm_packed(x.data(), M, packed, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(to_string(dtype));
  state.counters["GOP/s"] =
      benchmark::Counter(2.0 * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_GB/s"] = benchmark::Counter(static_cast<double>(packed.bytes()) * 1e-9,
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GemmQuantized)
    ->ArgNames({"M", "N", "K", "fmt"})
    ->ArgsProduct({{1, 512}, {4096}, {2048}, {5, 6, 7, 8, 9, 10, 11}})
    ->Args({1, 16384, 2048, 0})
    ->Args({1, 16384, 2048, 1})
    ->Args({1, 16384, 2048, 2})
    ->Args({1, 16384, 2048, 3})
    ->Args({1, 16384, 2048, 4})
    ->Args({1, 4096, 2048, 0})
    ->Args({1, 4096, 2048, 1})
    ->Args({1, 4096, 2048, 2})
    ->Args({1, 65536, 2048, 0})
    ->Args({1, 65536, 2048, 1})
    ->Args({1, 65536, 2048, 2})
    ->Args({1, 65536, 2048, 3})
    ->Args({4, 16384, 2048, 0})
    ->Args({5, 16384, 2048, 0})
    ->Args({5, 16384, 2048, 1})
    ->Args({5, 16384, 2048, 2})
    ->Args({6, 16384, 2048, 0})
    ->Args({6, 16384, 2048, 2})
    ->Args({8, 16384, 2048, 0})
    ->Args({16, 16384, 2048, 0})
    ->Args({4, 16384, 2048, 1})
    ->Args({8, 16384, 2048, 1})
    ->Args({32, 16384, 2048, 0})
    ->Args({32, 16384, 2048, 1})
    ->Args({512, 2304, 768, 0})   // llama-110m's qkv
    ->Args({512, 2048, 8192, 0})  // llama-1b's down projection
    ->Args({512, 3072, 2048, 0})
    ->Args({32, 16384, 2048, 2})
    ->Args({512, 3072, 2048, 4})
    ->Args({512, 3072, 2048, 3})
    ->Args({512, 3072, 2048, 1})
    ->Args({512, 3072, 2048, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The KV cache dtype a benchmark argument names: 0 f32, 1 bf16 (a bf16 model's), 2 q8_0.
DType kv_dtype_arg(int64_t arg) {
  return arg == 2 ? DType::kQ8_0 : arg == 1 ? DType::kBF16 : DType::kF32;
}

// args: context length, query tokens (1 = decode), KV cache dtype (kv_dtype_arg), kv heads (8:
// llama-1b's 32 query heads over 8; 12: llama-110m's 12 over 12). Head size 64.
void BM_PagedAttention(benchmark::State& state) {
  const int ctx = static_cast<int>(state.range(0)), queries = static_cast<int>(state.range(1));
  const DType kv_dtype = kv_dtype_arg(state.range(2));
  const int kv_heads = static_cast<int>(state.range(3));
  const int heads = kv_heads == 12 ? 12 : 32, D = 64, block = 16;
  const int nblocks = (ctx + block - 1) / block;
  KVCacheSpec spec{1, nblocks + 1, block, kv_heads, D, kv_dtype};
  PagedKVCache cache(spec);
  std::vector<int32_t> table(static_cast<size_t>(nblocks));
  std::vector<int64_t> slots;
  for (int b = 0; b < nblocks; ++b) table[static_cast<size_t>(b)] = b + 1;
  for (int p = 0; p < ctx; ++p)
    slots.push_back(int64_t{table[static_cast<size_t>(p / block)]} * block + p % block);
  auto kv = random_vector(static_cast<size_t>(ctx) * kv_heads * D, 3);
  cpu::reshape_and_cache(kv.data(), kv.data(), slots, cache.layer(0));
  auto q = random_vector(static_cast<size_t>(queries) * heads * D, 4);
  std::vector<float> out(q.size());
  std::vector<int32_t> positions;
  for (int i = 0; i < queries; ++i) positions.push_back(ctx - queries + i);
  const std::vector<int32_t> qsl = {0, queries};
  cpu::AttentionBatch batch{1, qsl, positions, table, nblocks};
  for (auto _ : state) {
    cpu::paged_attention(q.data(), heads, batch, cache.layer(0), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  double pairs = 0;
  for (int p : positions) pairs += p + 1;
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * pairs * heads * D * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["KV_GB/s"] =
      benchmark::Counter(static_cast<double>(spec.bytes_per_layer_block()) * 2 * ctx / block * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PagedAttention)
    ->ArgNames({"ctx", "queries", "dtype", "kv"})
    ->Args({128, 1, 0, 8})
    ->Args({1024, 1, 0, 8})
    ->Args({4096, 1, 0, 8})
    ->Args({4096, 1, 1, 8})
    ->Args({4096, 1, 2, 8})
    // llama-110m's decode (one query a kv head) at batched's contexts, whose last chunk is
    // mostly partial
    ->Args({250, 1, 0, 12})
    ->Args({250, 1, 1, 12})
    ->Args({4096, 1, 1, 12})
    ->Args({512, 512, 0, 8})
    ->Args({512, 512, 1, 8})
    ->Args({512, 512, 2, 8})
    ->Args({512, 512, 0, 12})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: KV cache dtype (kv_dtype_arg). A 512-token prefill's keys and values stored through
// slot_mapping into consecutive slots (32 blocks of 16), 8 kv heads of 64.
void BM_ReshapeAndCache(benchmark::State& state) {
  const DType kv_dtype = kv_dtype_arg(state.range(0));
  const int tokens = 512, kv_heads = 8, D = 64, block = 16;
  PagedKVCache cache(KVCacheSpec{1, tokens / block + 1, block, kv_heads, D, kv_dtype});
  std::vector<int64_t> slots;
  for (int t = 0; t < tokens; ++t) slots.push_back(block + t);  // from block 1
  const auto k = random_vector(static_cast<size_t>(tokens) * kv_heads * D, 8);
  const auto v = random_vector(k.size(), 9);
  for (auto _ : state) {
    cpu::reshape_and_cache(k.data(), v.data(), slots, cache.layer(0));
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * static_cast<double>(k.size()) * 4 * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ReshapeAndCache)
    ->ArgName("dtype")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_RmsNorm(benchmark::State& state) {
  const int rows = 512, dim = 2048;
  auto x = random_vector(static_cast<size_t>(rows) * dim, 5), w = random_vector(dim, 6);
  std::vector<float> out(x.size());
  for (auto _ : state) {
    cpu::rms_norm(x.data(), w.data(), out.data(), rows, dim, 1e-5f);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * x.size() * 4 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RmsNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Greedy sampling's argmax over one llama-1b logits row (128256), against std::max_element.
void BM_GreedyArgmax(benchmark::State& state) {
  const auto logits = random_vector(128256, 12);
  const bool reference = state.range(0) != 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(reference
                                 ? std::max_element(logits.begin(), logits.end()) - logits.begin()
                                 : argmax(logits));
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(logits.size()) * 4 * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GreedyArgmax)
    ->ArgName("max_element")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_Rope(benchmark::State& state) {
  const int tokens = 512, heads = 32, D = 64;
  auto x = random_vector(static_cast<size_t>(tokens) * heads * D, 7);
  std::vector<int32_t> pos(tokens);
  for (int i = 0; i < tokens; ++i) pos[static_cast<size_t>(i)] = i;
  ModelConfig c;
  c.head_dim = D;
  c.rope_theta = 500000.0f;
  const auto inv = rope_inverse_frequencies(c);
  cpu::RopeAngles angles;
  cpu::rope_angles(pos, inv, angles);
  for (auto _ : state) {
    cpu::apply_rope(x.data(), tokens, heads, angles, RopeStyle::kNeox);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * x.size() * 4 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Rope)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_SwiGLU(benchmark::State& state) {
  const int tokens = 512, hidden = 8192;
  const size_t n = static_cast<size_t>(tokens) * hidden;
  const auto gate_up = random_vector(2 * n, 8);
  std::vector<float> out(n);
  for (auto _ : state) {
    cpu::swiglu(gate_up.data(), tokens, hidden, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(3.0 * n * 4 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SwiGLU)->Unit(benchmark::kMicrosecond)->UseRealTime();

// This machine's limits, measured the way the kernels use it.
__attribute__((target("avx512f"))) double sum_avx512(const float* a, size_t n,
                                                     size_t prefetch_bytes) {
  __m512 acc[8];
  for (auto& x : acc) x = _mm512_setzero_ps();
  for (size_t i = 0; i + 128 <= n; i += 128) {
    if (prefetch_bytes > 0) {
      for (int j = 0; j < 8; ++j) {
        _mm_prefetch(reinterpret_cast<const char*>(a + i + 16 * j) + prefetch_bytes, _MM_HINT_T0);
      }
    }
    for (int j = 0; j < 8; ++j) acc[j] = _mm512_add_ps(acc[j], _mm512_load_ps(a + i + 16 * j));
  }
  alignas(64) float lanes[16];
  __m512 s = acc[0];
  for (int j = 1; j < 8; ++j) s = _mm512_add_ps(s, acc[j]);
  _mm512_store_ps(lanes, s);
  double total = 0.0;
  for (float v : lanes) total += v;
  return total;
}

// Streaming read of 2 GiB (far beyond any cache), 8 independent vector accumulators per thread;
// arg: bytes ahead to prefetch in software (0: the hardware prefetcher alone), as the decode
// GEMMs do.
void BM_StreamRead(benchmark::State& state) {
  const auto prefetch_bytes = static_cast<size_t>(state.range(0));
  if (!cpu::cpu_supports(cpu::Isa::kAvx512)) {
    state.SkipWithError("no AVX-512");
    return;
  }
  const size_t n = size_t{1} << 29;
  float* a = static_cast<float*>(std::aligned_alloc(64, n * 4));
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) a[i] = 1.0f;
  for (auto _ : state) {
    double total = 0.0;
#pragma omp parallel reduction(+ : total)
    {
      const size_t threads = static_cast<size_t>(omp_get_num_threads());
      const size_t chunk = n / threads / 128 * 128;
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      total += sum_avx512(a + t * chunk, chunk, prefetch_bytes);
    }
    benchmark::DoNotOptimize(total);
  }
  std::free(a);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(n) * 4 * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StreamRead)
    ->ArgNames({"prefetch"})
    ->Arg(0)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Folds the 12 chains into one number, so that the compiler keeps them all.
__attribute__((target("avx512f"))) double sum_chains(const __m512 (&acc)[12]) {
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  double total = 0.0;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx512f,fma"))) double fma_chains(int64_t iters) {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_set1_ps(0.0f);
  const __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  for (int64_t i = 0; i < iters; ++i) {
    for (auto& a : acc) a = _mm512_fmadd_ps(x, a, y);
  }
  return sum_chains(acc);
}

// Runs chains(iters) on every thread and reports flops_per_iter * iters * threads per second.
void report_peak(benchmark::State& state, double (*chains)(int64_t), double flops_per_iter) {
  const int64_t iters = 1 << 22;
  for (auto _ : state) {
    double total = 0.0;
#pragma omp parallel reduction(+ : total)
    total += chains(iters);
    benchmark::DoNotOptimize(total);
  }
  int threads = 1;
#pragma omp parallel
#pragma omp single
  threads = omp_get_num_threads();
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iter * static_cast<double>(iters) * threads * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BM_FmaPeakAvx512(benchmark::State& state) {
  if (!cpu::cpu_supports(cpu::Isa::kAvx512)) {
    state.SkipWithError("no AVX-512");
    return;
  }
  report_peak(state, fma_chains, 2.0 * 16 * 12);
}
BENCHMARK(BM_FmaPeakAvx512)->Unit(benchmark::kMillisecond)->UseRealTime();

__attribute__((target("avx512f,avx512bf16"))) double dot_bf16_chains(int64_t iters) {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_set1_ps(0.0f);
  const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3F803F80));  // 1.0, 1.0
  const __m512bh y = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3A803A80));  // 2^-10
  for (int64_t i = 0; i < iters; ++i) {
    for (auto& a : acc) a = _mm512_dpbf16_ps(a, x, y);
  }
  return sum_chains(acc);
}

// The bf16 GEMM's limit where the CPU has AVX512-BF16: vdpbf16ps does 2 multiply-adds per lane.
void BM_Bf16DotPeak(benchmark::State& state) {
  if (!cpu::cpu_supports(cpu::Isa::kAvx512Bf16)) {
    state.SkipWithError("no AVX512-BF16");
    return;
  }
  report_peak(state, dot_bf16_chains, 4.0 * 16 * 12);
}
BENCHMARK(BM_Bf16DotPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
