#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/dequant.h"

namespace pagedllm::cpu {

namespace {

// Storage element types of the cache: f32 as is, bf16 rounded to nearest even.
inline void store(float* p, float v) {
  *p = v;
}
inline void store(uint16_t* p, float v) {
  *p = f32_to_bf16(v);
}
inline float load(const float* p) {
  return *p;
}
inline float load(const uint16_t* p) {
  return bf16_to_f32(*p);
}

template <typename T>
void reshape_and_cache_impl(const float* key, const float* value,
                            std::span<const int64_t> slot_mapping, const KVCacheLayer& cache) {
  const auto& s = cache.spec;
  T* kc = static_cast<T*>(cache.key);
  T* vc = static_cast<T*>(cache.value);
  const int width = s.num_kv_heads * s.head_size;
  for (size_t t = 0; t < slot_mapping.size(); ++t) {
    const int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    const int64_t block = slot / s.block_size;
    const int offset = static_cast<int>(slot % s.block_size);
    const float* k = key + t * static_cast<size_t>(width);
    const float* v = value + t * static_cast<size_t>(width);
    for (int h = 0; h < s.num_kv_heads; ++h) {
      for (int d = 0; d < s.head_size; ++d) {
        store(kc + cache.key_index(block, h, d, offset), k[h * s.head_size + d]);
        store(vc + cache.value_index(block, h, d, offset), v[h * s.head_size + d]);
      }
    }
  }
}

using attention::kChunk;
using attention::QueryState;

// K of 16 consecutive context positions as a [D][16] tile and V as a [16][D] tile, read from
// the cache whatever its layout or block size, so the arithmetic never depends on either.
template <typename T>
void gather_chunk(const KVCacheLayer& c, const int32_t* blocks, int kv_head, int j0, int count,
                  float* kt, float* vt) {
  const auto& s = c.spec;
  const T* kc = static_cast<const T*>(c.key);
  const T* vc = static_cast<const T*>(c.value);
  const int D = s.head_size, bs = s.block_size;
  if (count == kChunk && bs % kChunk == 0 && s.layout == KVLayout::kCpu) {
    // The whole chunk lies in one block: contiguous runs only.
    const int64_t block = blocks[j0 / bs];
    const int o0 = j0 % bs;
    const T* kslab = kc + c.key_index(block, kv_head, 0, o0);
    for (int d = 0; d < D; ++d) {
      const T* ks = kslab + static_cast<size_t>(d) * bs;
      for (int o = 0; o < kChunk; ++o) kt[d * kChunk + o] = load(ks + o);
    }
    const T* vslab = vc + c.value_index(block, kv_head, 0, o0);
    for (int i = 0; i < kChunk * D; ++i) vt[i] = load(vslab + i);
    return;
  }
  for (int o = 0; o < kChunk; ++o) {
    if (o >= count) {
      for (int d = 0; d < D; ++d) kt[d * kChunk + o] = vt[o * D + d] = 0.0f;
      continue;
    }
    const int64_t block = blocks[(j0 + o) / bs];
    const int offset = (j0 + o) % bs;
    for (int d = 0; d < D; ++d) {
      kt[d * kChunk + o] = load(kc + c.key_index(block, kv_head, d, offset));
      vt[o * D + d] = load(vc + c.value_index(block, kv_head, d, offset));
    }
  }
}

using AttendFn = void (*)(QueryState*, int, int, float, const float*, const float*);

AttendFn attention_kernel(int head_size) {
  if (active_isa() >= Isa::kAvx512 && attention::avx512_attention_handles(head_size))
    return attention::attend_queries_avx512;
  return attention::attend_queries_portable;
}

// All query tokens of one request for the query heads of one kv head: the context is gathered
// into tiles once (padded with zero chunks to whole strips) and shared by every token and head
// of the group.
template <typename T>
void attend_group(AttendFn attend, const float* q, int num_heads, int kv_head, int group, int begin,
                  int end, std::span<const int32_t> positions, const int32_t* blocks,
                  const KVCacheLayer& cache, float scale, float* out, std::vector<float>& tiles,
                  std::vector<float>& acc, std::vector<QueryState>& qs) {
  const int D = cache.spec.head_size;
  int max_pos = 0;
  for (int t = begin; t < end; ++t) max_pos = std::max(max_pos, positions[static_cast<size_t>(t)]);
  const int num_chunks = max_pos / kChunk + 1;
  const int padded =
      (num_chunks + attention::kChunkPad - 1) / attention::kChunkPad * attention::kChunkPad;
  const size_t tile = static_cast<size_t>(D) * kChunk;
  tiles.resize(2 * static_cast<size_t>(padded) * tile);
  float* kts = tiles.data();
  float* vts = kts + static_cast<size_t>(padded) * tile;
  for (int ch = 0; ch < padded; ++ch) {
    const int j0 = ch * kChunk;
    gather_chunk<T>(cache, blocks, kv_head, j0, std::min(kChunk, max_pos + 1 - j0), kts + ch * tile,
                    vts + ch * tile);
  }
  const int num_queries = (end - begin) * group;
  acc.assign(static_cast<size_t>(num_queries) * D, 0.0f);
  qs.clear();
  for (int t = begin; t < end; ++t) {
    for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
      const size_t offset = (static_cast<size_t>(t) * num_heads + h) * D;
      qs.push_back({q + offset, positions[static_cast<size_t>(t)],
                    -std::numeric_limits<float>::infinity(), 0.0f,
                    acc.data() + qs.size() * static_cast<size_t>(D)});
    }
  }
  attend(qs.data(), num_queries, D, scale, kts, vts);
  size_t k = 0;
  for (int t = begin; t < end; ++t) {
    for (int h = kv_head * group; h < (kv_head + 1) * group; ++h, ++k) {
      const size_t offset = (static_cast<size_t>(t) * num_heads + h) * D;
      const float inv = 1.0f / qs[k].running_sum;
      for (int d = 0; d < D; ++d) out[offset + static_cast<size_t>(d)] = qs[k].acc[d] * inv;
    }
  }
}

}  // namespace

void reshape_and_cache(const float* key, const float* value, std::span<const int64_t> slot_mapping,
                       KVCacheLayer cache) {
  if (cache.spec.dtype == DType::kBF16) {
    reshape_and_cache_impl<uint16_t>(key, value, slot_mapping, cache);
  } else {
    reshape_and_cache_impl<float>(key, value, slot_mapping, cache);
  }
}

void paged_attention(const float* q, int num_heads, const AttentionBatch& batch,
                     const KVCacheLayer& cache, float* out) {
  const auto attend =
      cache.spec.dtype == DType::kBF16 ? attend_group<uint16_t> : attend_group<float>;
  const auto& s = cache.spec;
  const int group = num_heads / s.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_size));
  const AttendFn kernel = attention_kernel(s.head_size);
#pragma omp parallel
  {
    std::vector<float> tiles, acc;  // reused by every (request, kv head) of this thread
    std::vector<QueryState> qs;
#pragma omp for schedule(dynamic, 1) collapse(2)
    for (int r = 0; r < batch.num_reqs; ++r) {
      for (int g = 0; g < s.num_kv_heads; ++g) {
        const int32_t* blocks =
            batch.block_table.data() + static_cast<size_t>(r) * batch.max_blocks_per_req;
        attend(kernel, q, num_heads, g, group, batch.query_start_loc[static_cast<size_t>(r)],
               batch.query_start_loc[static_cast<size_t>(r) + 1], batch.positions, blocks, cache,
               scale, out, tiles, acc, qs);
      }
    }
  }
}

}  // namespace pagedllm::cpu
