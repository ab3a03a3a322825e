#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "format/dequant.h"
#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/flush_denormals.h"
#include "kernels/cpu/kv_store.h"

namespace pagedllm::cpu {

namespace {

// Storage element types of the cache: f32 as is, bf16 rounded to nearest even, fp8 E4M3
// rounded to nearest even and saturated (q8_0 is stored a group at a time, below).
inline void store(float* p, float v) {
  *p = v;
}
inline void store(uint16_t* p, float v) {
  *p = f32_to_bf16(v);
}
inline void store(uint8_t* p, float v) {
  *p = f32_to_fp8_e4m3(v);
}

template <typename T>
void cache_token_impl(const float* k, const float* v, int64_t slot, const KVCacheLayer& cache) {
  if (slot < 0) return;
  const auto& s = cache.spec;
  T* kc = static_cast<T*>(cache.key);
  T* vc = static_cast<T*>(cache.value);
  const int64_t block = slot / s.block_size;
  const int offset = static_cast<int>(slot % s.block_size);
  for (int h = 0; h < s.num_kv_heads; ++h) {
    const float* kh = k + h * s.head_size;
    const float* vh = v + h * s.head_size;
    if (s.layout == KVLayout::kCpu) {  // K[d][offset] rows of stride block_size, V[offset][d]
      T* kd = kc + cache.key_index(block, h, 0, offset);
      T* vd = vc + cache.value_index(block, h, 0, offset);
      for (int d = 0; d < s.head_size; ++d)
        store(kd + static_cast<size_t>(d) * s.block_size, kh[d]);
      for (int d = 0; d < s.head_size; ++d) store(vd + d, vh[d]);
      continue;
    }
    for (int d = 0; d < s.head_size; ++d) {
      store(kc + cache.key_index(block, h, d, offset), kh[d]);
      store(vc + cache.value_index(block, h, d, offset), vh[d]);
    }
  }
}

// Tokens [0, count) at consecutive slots from slot0, all in slot0's block of the CPU layout: each
// K row [d][offset] of the block is written in one pass over the tokens, where cache_token_impl
// writes one element of every row per token (BM_ReshapeAndCache, 2 threads: f32 89-96 -> 65 us).
// A bf16 cache rounds 16 values at a time where the CPU has AVX-512 and 8 on AVX2 (kv_store.h):
// its scalar rounding cost more than the scattered stores (one thread, interleaved: 515-522 ->
// 246 us on AVX-512; on the AVX2 paths see KERNELS.md).
template <typename T>
void cache_run_impl(const float* k, const float* v, int width, int count, int64_t slot0,
                    const KVCacheLayer& cache) {
  const auto& s = cache.spec;
  const int64_t block = slot0 / s.block_size;
  const int offset0 = static_cast<int>(slot0 % s.block_size);
  T* kc = static_cast<T*>(cache.key);
  T* vc = static_cast<T*>(cache.value);
  const bool avx512 = active_isa() >= Isa::kAvx512, avx2 = active_isa() >= Isa::kAvx2;
  const auto store_keys = avx512 ? store_key_rows_bf16_avx512 : store_key_rows_bf16_avx2;
  const auto round_values = avx512 ? round_to_bf16_avx512 : round_to_bf16_avx2;
  for (int h = 0; h < s.num_kv_heads; ++h) {
    const size_t column = static_cast<size_t>(h) * s.head_size;
    T* kd = kc + cache.key_index(block, h, 0, offset0);
    if constexpr (std::is_same_v<T, uint16_t>) {
      if (avx2) {
        store_keys(k + column, width, count, s.head_size, kd, s.block_size);
        for (int j = 0; j < count; ++j) {
          round_values(v + static_cast<size_t>(j) * width + column, s.head_size,
                       vc + cache.value_index(block, h, 0, offset0 + j));
        }
        continue;
      }
    }
    for (int d = 0; d < s.head_size; ++d) {
      for (int j = 0; j < count; ++j)
        store(kd + static_cast<size_t>(d) * s.block_size + j,
              k[static_cast<size_t>(j) * width + column + d]);
    }
    for (int j = 0; j < count; ++j) {
      T* vd = vc + cache.value_index(block, h, 0, offset0 + j);
      const float* vj = v + static_cast<size_t>(j) * width + column;
      for (int d = 0; d < s.head_size; ++d) store(vd + d, vj[d]);
    }
  }
}

// A q8_0 code: v rounded to the nearest integer, ties to even (adding and subtracting 1.5 * 2^23
// rounds any |v| < 2^22 exactly, with no libm call: std::round cost 3-8 % of a prefill),
// clamped to [-127, 127]; NaN gives -127 (std::max keeps its first argument against NaN).
inline int8_t q8_code(float v) {
  constexpr float kRound = 12582912.0f;
  const float q = std::min(127.0f, std::max(-127.0f, (v + kRound) - kRound));
  return static_cast<int8_t>(q);
}

// One position's head vector as q8_0 groups, as llama.cpp's quantize_row_q8_0 makes them: per
// 32 elements (the last group may be shorter), scale = amax / 127 (stored as f16) and codes
// x / scale rounded (ties to even, where llama.cpp's roundf takes them away from zero). Codes go
// to code[i * code_stride], scales to scale[g * scale_stride].
void quantize_q8_0(const float* x, int n, int8_t* code, size_t code_stride, uint16_t* scale,
                   size_t scale_stride) {
  constexpr int kGroup = KVCacheSpec::kQ8Group;
  static_assert(kGroup == 32, "quantize_q8_group_avx512 takes two vectors");
  const bool avx512 = active_isa() >= Isa::kAvx512;
  for (int g = 0; g * kGroup < n; ++g) {
    const float* xg = x + g * kGroup;
    const int size = std::min(kGroup, n - g * kGroup);
    int8_t codes[kGroup];
    float d;
    if (avx512) {
      d = quantize_q8_group_avx512(xg, size, codes);
    } else {
      float amax = 0.0f;
      for (int i = 0; i < size; ++i) amax = std::max(amax, std::fabs(xg[i]));
      d = amax / 127.0f;
      const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
      for (int i = 0; i < size; ++i) codes[i] = q8_code(xg[i] * inverse);
    }
    for (int i = 0; i < size; ++i)
      code[static_cast<size_t>(g * kGroup + i) * code_stride] = codes[i];
    scale[static_cast<size_t>(g) * scale_stride] = f32_to_f16(d);
  }
}

// One token's K and V into a q8_0 cache (CPU layout): K codes down their [d][offset] column,
// V codes along their row, each group's scale beside its codes' position.
void cache_token_q8_0(const float* k, const float* v, int64_t slot, const KVCacheLayer& cache) {
  if (slot < 0) return;
  const auto& s = cache.spec;
  const int64_t block = slot / s.block_size;
  const int offset = static_cast<int>(slot % s.block_size);
  auto* kc = static_cast<int8_t*>(cache.key);
  auto* vc = static_cast<int8_t*>(cache.value);
  for (int h = 0; h < s.num_kv_heads; ++h) {
    quantize_q8_0(k + h * s.head_size, s.head_size, kc + cache.key_index(block, h, 0, offset),
                  static_cast<size_t>(s.block_size),
                  cache.key_scale + cache.key_scale_index(block, h, 0, offset),
                  static_cast<size_t>(s.block_size));
    quantize_q8_0(v + h * s.head_size, s.head_size, vc + cache.value_index(block, h, 0, offset), 1,
                  cache.value_scale + cache.value_scale_index(block, h, offset, 0), 1);
  }
}

// Where tokens [t, end) can be written as one run: consecutive slots within one block.
int64_t run_end(std::span<const int64_t> slots, int64_t t, int block_size) {
  int64_t end = t + 1;
  const auto n = static_cast<int64_t>(slots.size());
  while (end < n && slots[static_cast<size_t>(end)] == slots[static_cast<size_t>(end - 1)] + 1 &&
         slots[static_cast<size_t>(end)] % block_size != 0)
    ++end;
  return end;
}

// Each token owns its slot (its codes' bytes and its scales), so the tokens' writes never overlap.
void reshape_and_cache_q8_0(const float* key, const float* value,
                            std::span<const int64_t> slot_mapping, const KVCacheLayer& cache,
                            int width) {
  const auto tokens = static_cast<int64_t>(slot_mapping.size());
#pragma omp parallel for schedule(static) if (tokens > 8)
  for (int64_t t = 0; t < tokens; ++t) {
    cache_token_q8_0(key + static_cast<size_t>(t) * width, value + static_cast<size_t>(t) * width,
                     slot_mapping[static_cast<size_t>(t)], cache);
  }
}

template <typename T>
void reshape_and_cache_impl(const float* key, const float* value,
                            std::span<const int64_t> slot_mapping, const KVCacheLayer& cache,
                            int width) {
  const auto tokens = static_cast<int64_t>(slot_mapping.size());
  if (cache.spec.layout != KVLayout::kCpu) {
    // Each token owns its slot, so the tokens' writes never overlap.
#pragma omp parallel for schedule(static) if (tokens > 8)
    for (int64_t t = 0; t < tokens; ++t) {
      cache_token_impl<T>(key + static_cast<size_t>(t) * width,
                          value + static_cast<size_t>(t) * width,
                          slot_mapping[static_cast<size_t>(t)], cache);
    }
    return;
  }
  // Runs of a prefill's consecutive slots, cut at block ends (distinct runs own distinct slots).
  // thread_local: reused by every layer and step rather than allocated each call.
  thread_local std::vector<int64_t> run_starts;
  run_starts.clear();
  for (int64_t t = 0; t < tokens; t = run_end(slot_mapping, t, cache.spec.block_size))
    run_starts.push_back(t);
  run_starts.push_back(tokens);
  const auto runs = static_cast<int64_t>(run_starts.size()) - 1;
  const int64_t* starts = run_starts.data();  // this thread's, not each worker's
#pragma omp parallel for schedule(static) if (tokens > 8)
  for (int64_t r = 0; r < runs; ++r) {
    const int64_t t = starts[r];
    const int64_t slot = slot_mapping[static_cast<size_t>(t)];
    if (slot < 0) continue;
    cache_run_impl<T>(key + static_cast<size_t>(t) * width, value + static_cast<size_t>(t) * width,
                      width, static_cast<int>(starts[r + 1] - t), slot, cache);
  }
}

using attention::Chunks;
using attention::kChunk;
using attention::kIsQ8;
using attention::QueryState;

// Where a request's context chunks are for one kv head. A chunk that lies whole in one block of
// the CPU layout is read in place (K[d][o] rows of stride block_size), and so are the K rows of
// the context's last, partial chunk there (but for q8_0); any other tile (the vLLM layout, block
// sizes that are not a multiple of 16, the partial chunk's V) is copied into a dense tile of the
// same strides, zero past the context. q8_0 scales likewise.
template <typename T>
class ChunkLocator {
 public:
  Chunks<T> locate(const KVCacheLayer& c, const int32_t* blocks, int kv_head, int last_pos) {
    const auto& s = c.spec;
    const bool in_place = s.layout == KVLayout::kCpu && s.block_size % kChunk == 0;
    const int ldk = in_place ? s.block_size : kChunk;
    const int num_chunks = last_pos / kChunk + 1;
    const size_t k_size = static_cast<size_t>(s.head_size) * ldk;
    const size_t tile = k_size + static_cast<size_t>(kChunk) * s.head_size;
    const size_t tiles = in_place ? 1 : static_cast<size_t>(num_chunks);
    copies_.resize(tile * tiles);
    k_.resize(static_cast<size_t>(num_chunks));
    v_.resize(static_cast<size_t>(num_chunks));
    // q8_0: K scales [G][ldk] then V scales [16][G] per copied tile.
    const size_t ks_size = static_cast<size_t>(s.scale_groups()) * ldk;
    const size_t scale_tile = ks_size + static_cast<size_t>(kChunk) * s.scale_groups();
    if constexpr (kIsQ8<T>) {
      scale_copies_.resize(scale_tile * tiles);
      ks_.resize(static_cast<size_t>(num_chunks));
      vs_.resize(static_cast<size_t>(num_chunks));
    }
    const T* kc = static_cast<const T*>(c.key);
    const T* vc = static_cast<const T*>(c.value);
    T* copy = copies_.data();
    uint16_t* scale_copy = scale_copies_.data();
    for (int ch = 0; ch < num_chunks; ++ch) {
      const int j0 = ch * kChunk;
      const int count = std::min(kChunk, last_pos + 1 - j0);
      const auto i = static_cast<size_t>(ch);
      if (in_place) {  // the chunk lies in one block
        const int64_t block = blocks[j0 / s.block_size];
        const int offset = j0 % s.block_size;
        if (count == kChunk) {
          k_[i] = kc + c.key_index(block, kv_head, 0, offset);
          v_[i] = vc + c.value_index(block, kv_head, 0, offset);
          if constexpr (kIsQ8<T>) {
            ks_[i] = c.key_scale + c.key_scale_index(block, kv_head, 0, offset);
            vs_[i] = c.value_scale + c.value_scale_index(block, kv_head, offset, 0);
          }
          continue;
        }
        if constexpr (!kIsQ8<T>) {
          // The context's last, partial chunk (every decode step has one): its K rows are read
          // in place, as the positions past the context get -inf scores whatever their K holds,
          // and only its V rows are copied, as a weight of 0 times a stale NaN would not vanish.
          // Copying the K rows as well took 3 % of a batch's decode (llama-110m f32 batched on
          // the AVX2 paths, perf).
          k_[i] = kc + c.key_index(block, kv_head, 0, offset);
          v_[i] = copy + k_size;
          copy_value_rows(c, block, kv_head, offset, count, copy + k_size);
          continue;
        }
      }
      copy_chunk(c, blocks, kv_head, j0, count, ldk, copy, copy + k_size);
      k_[i] = copy;
      v_[i] = copy + k_size;
      copy += tile;
      if constexpr (kIsQ8<T>) {
        copy_scales(c, blocks, kv_head, j0, count, ldk, scale_copy, scale_copy + ks_size);
        ks_[i] = scale_copy;
        vs_[i] = scale_copy + ks_size;
        scale_copy += scale_tile;
      }
    }
    if constexpr (kIsQ8<T>) return Chunks<T>{k_.data(), v_.data(), ldk, ks_.data(), vs_.data()};
    return Chunks<T>{k_.data(), v_.data(), ldk, nullptr, nullptr};
  }

 private:
  static void copy_scales(const KVCacheLayer& c, const int32_t* blocks, int kv_head, int j0,
                          int count, int ldk, uint16_t* ks, uint16_t* vs) {
    const int groups = c.spec.scale_groups(), bs = c.spec.block_size;
    for (int o = 0; o < kChunk; ++o) {
      const int64_t block = o < count ? blocks[(j0 + o) / bs] : 0;
      const int offset = (j0 + o) % bs;
      for (int g = 0; g < groups; ++g) {
        ks[g * ldk + o] = o < count ? c.key_scale[c.key_scale_index(block, kv_head, g, offset)] : 0;
        vs[o * groups + g] =
            o < count ? c.value_scale[c.value_scale_index(block, kv_head, offset, g)] : 0;
      }
    }
  }

  // The V rows of `count` positions from offset of one block of the CPU layout into a dense
  // 16-row tile, zero past them.
  static void copy_value_rows(const KVCacheLayer& c, int64_t block, int kv_head, int offset,
                              int count, T* vt) {
    const auto D = static_cast<size_t>(c.spec.head_size);
    std::copy_n(static_cast<const T*>(c.value) + c.value_index(block, kv_head, 0, offset),
                static_cast<size_t>(count) * D, vt);
    std::fill(vt + static_cast<size_t>(count) * D, vt + static_cast<size_t>(kChunk) * D, T{0});
  }

  static void copy_chunk(const KVCacheLayer& c, const int32_t* blocks, int kv_head, int j0,
                         int count, int ldk, T* kt, T* vt) {
    const T* kc = static_cast<const T*>(c.key);
    const T* vc = static_cast<const T*>(c.value);
    const int D = c.spec.head_size, bs = c.spec.block_size;
    if (c.spec.layout == KVLayout::kCpu && j0 % bs + count <= bs) {
      // A context's last, partial chunk in one block of the CPU layout (here for q8_0 and for
      // block sizes that are not a multiple of 16; locate reads the other types' K rows in
      // place): its K rows and V rows copied whole rather than element by element with the index
      // arithmetic of any layout (BM_PagedAttention ctx 250, 12 kv heads, one thread, on the
      // AVX2 paths, alternating: bf16 27.8-28.3 -> 25.0-26.6 us, f32 35.8-37.5 -> 33.5-33.7).
      const int64_t block = blocks[j0 / bs];
      const int offset = j0 % bs;
      for (int d = 0; d < D; ++d) {
        std::copy_n(kc + c.key_index(block, kv_head, d, offset), count, kt + d * ldk);
        std::fill(kt + d * ldk + count, kt + d * ldk + kChunk, T{0});
      }
      copy_value_rows(c, block, kv_head, offset, count, vt);
      return;
    }
    for (int o = 0; o < kChunk; ++o) {
      if (o >= count) {
        for (int d = 0; d < D; ++d) kt[d * ldk + o] = vt[o * D + d] = T{0};
        continue;
      }
      const int64_t block = blocks[(j0 + o) / bs];
      const int offset = (j0 + o) % bs;
      for (int d = 0; d < D; ++d) {
        kt[d * ldk + o] = kc[c.key_index(block, kv_head, d, offset)];
        vt[o * D + d] = vc[c.value_index(block, kv_head, d, offset)];
      }
    }
  }

  std::vector<const T*> k_, v_;
  std::vector<T> copies_;
  std::vector<const uint16_t*> ks_, vs_;  // q8_0 only
  std::vector<uint16_t> scale_copies_;
};

template <typename T>
using AttendFn = void (*)(QueryState*, int, int, float, const Chunks<T>&);
using RoundFn = void (*)(const float*, int, float*);

// The kernel for the CPU and head size, and for a bf16 cache whose kernel takes the queries
// rounded (attention_tile.h), the rounding on the widest path the CPU has.
template <typename T>
struct Kernel {
  AttendFn<T> attend;
  RoundFn round_queries = nullptr;
};

template <typename T>
Kernel<T> attention_kernel(int head_size) {
  const Isa isa = active_isa();
  if constexpr (attention::kIsBf16<T>) {
    if (isa >= Isa::kAvx512Bf16 && attention::avx512_attention_handles(head_size))
      return {attention::attend_queries_avx512_dot};  // rounds them itself
  }
  Kernel<T> k{attention::attend_queries_portable<T>};
  if (isa >= Isa::kAvx512 && attention::avx512_attention_handles(head_size)) {
    k.attend = attention::attend_queries_avx512<T>;
  } else if (isa >= Isa::kAvx2 && attention::avx2_attention_handles(head_size)) {
    k.attend = attention::attend_queries_avx2<T>;
  }
  if constexpr (attention::kIsBf16<T>) {
    k.round_queries = isa >= Isa::kAvx512 ? attention::round_queries_avx512
                      : isa >= Isa::kAvx2 ? attention::round_queries_avx2
                                          : attention::round_queries_portable;
  }
  return k;
}

// Per-thread buffers, reused by every (request, kv head) and every call the thread takes.
template <typename T>
struct Workspace {
  ChunkLocator<T> chunks;
  std::vector<float> acc;
  std::vector<float> rounded_q;  // bf16 caches: the queries rounded to bf16
  std::vector<QueryState> qs;
};

// All query tokens of one request for the query heads of one kv head: the context's chunks are
// located once and shared by every token and head of the group.
template <typename T>
void attend_group(const Kernel<T>& kernel, const float* q, int num_heads, int kv_head, int group,
                  int begin, int end, std::span<const int32_t> positions, const int32_t* blocks,
                  const KVCacheLayer& cache, float scale, float* out, Workspace<T>& ws) {
  const int D = cache.spec.head_size;
  int max_pos = 0;
  for (int t = begin; t < end; ++t) max_pos = std::max(max_pos, positions[static_cast<size_t>(t)]);
  const Chunks<T> ctx = ws.chunks.locate(cache, blocks, kv_head, max_pos);
  const int num_queries = (end - begin) * group;
  ws.acc.assign(static_cast<size_t>(num_queries) * D, 0.0f);
  ws.qs.clear();
  if (kernel.round_queries) {
    // The group's queries of each token are side by side in q: one rounding per token.
    ws.rounded_q.resize(static_cast<size_t>(num_queries) * D);
    for (int t = begin; t < end; ++t) {
      kernel.round_queries(
          q + (static_cast<size_t>(t) * num_heads + static_cast<size_t>(kv_head) * group) * D,
          group * D, ws.rounded_q.data() + static_cast<size_t>(t - begin) * group * D);
    }
  }
  for (int t = begin; t < end; ++t) {
    for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
      const size_t offset = (static_cast<size_t>(t) * num_heads + h) * D;
      const float* query =
          kernel.round_queries ? ws.rounded_q.data() + ws.qs.size() * D : q + offset;
      ws.qs.push_back({query, positions[static_cast<size_t>(t)],
                       -std::numeric_limits<float>::infinity(), 0.0f,
                       ws.acc.data() + ws.qs.size() * static_cast<size_t>(D)});
    }
  }
  kernel.attend(ws.qs.data(), num_queries, D, scale, ctx);
  size_t k = 0;
  for (int t = begin; t < end; ++t) {
    for (int h = kv_head * group; h < (kv_head + 1) * group; ++h, ++k) {
      const size_t offset = (static_cast<size_t>(t) * num_heads + h) * D;
      const float inv = 1.0f / ws.qs[k].running_sum;
      for (int d = 0; d < D; ++d) out[offset + static_cast<size_t>(d)] = ws.qs[k].acc[d] * inv;
    }
  }
}

template <typename T>
void paged_attention_impl(const float* q, int num_heads, const AttentionBatch& batch,
                          const KVCacheLayer& cache, float* out) {
  const auto& s = cache.spec;
  const int group = num_heads / s.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_size));
  const Kernel<T> kernel = attention_kernel<T>(s.head_size);
  // (request, kv head) items claimed one at a time from a shared counter: OpenMP's dynamic
  // schedule costs a dispatch call per item and a barrier more, each a noticeable part of a
  // small model's decode step.
  const int items = batch.num_reqs * s.num_kv_heads;
  std::atomic<int> claimed{0};
#pragma omp parallel
  {
    // thread_local: the buffers outlive the call, so a step's layers allocate nothing.
    thread_local Workspace<T> ws;
    const FlushDenormals flush(attention::kIsBf16<T>);  // the bf16 order's flushing
    for (int i = claimed.fetch_add(1, std::memory_order_relaxed); i < items;
         i = claimed.fetch_add(1, std::memory_order_relaxed)) {
      const int r = i / s.num_kv_heads, g = i % s.num_kv_heads;
      const int32_t* blocks =
          batch.block_table.data() + static_cast<size_t>(r) * batch.max_blocks_per_req;
      attend_group<T>(kernel, q, num_heads, g, group, batch.query_start_loc[static_cast<size_t>(r)],
                      batch.query_start_loc[static_cast<size_t>(r) + 1], batch.positions, blocks,
                      cache, scale, out, ws);
    }
  }
}

}  // namespace

void reshape_and_cache(const float* key, const float* value, std::span<const int64_t> slot_mapping,
                       KVCacheLayer cache, int row_stride) {
  const int width = row_stride > 0 ? row_stride : cache.spec.num_kv_heads * cache.spec.head_size;
  if (cache.spec.dtype == DType::kBF16) {
    reshape_and_cache_impl<uint16_t>(key, value, slot_mapping, cache, width);
  } else if (cache.spec.dtype == DType::kF8E4M3) {
    reshape_and_cache_impl<uint8_t>(key, value, slot_mapping, cache, width);
  } else if (cache.spec.dtype == DType::kQ8_0) {
    reshape_and_cache_q8_0(key, value, slot_mapping, cache, width);
  } else {
    reshape_and_cache_impl<float>(key, value, slot_mapping, cache, width);
  }
}

void paged_attention(const float* q, int num_heads, const AttentionBatch& batch,
                     const KVCacheLayer& cache, float* out) {
  if (cache.spec.dtype == DType::kBF16) {
    paged_attention_impl<uint16_t>(q, num_heads, batch, cache, out);
  } else if (cache.spec.dtype == DType::kF8E4M3) {
    paged_attention_impl<uint8_t>(q, num_heads, batch, cache, out);
  } else if (cache.spec.dtype == DType::kQ8_0) {
    paged_attention_impl<int8_t>(q, num_heads, batch, cache, out);
  } else {
    paged_attention_impl<float>(q, num_heads, batch, cache, out);
  }
}

}  // namespace pagedllm::cpu
