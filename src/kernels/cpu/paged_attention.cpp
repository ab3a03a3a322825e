#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

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

constexpr int kChunk = 16;  // context positions processed together
constexpr int kMaxHeadSize = 512;

// exp(x) for x <= 0 (softmax arguments), a Cephes-style range reduction and polynomial written
// without libm so that it vectorizes and gives the same bits in every compiled version.
inline float exp_nonpositive(float x) {
  x = std::max(x, -87.0f);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &p, 4);
  bits += static_cast<int32_t>(n) << 23;
  std::memcpy(&p, &bits, 4);
  return p;
}

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

// One query head of one token against its context 0..pos, with its online-softmax state.
struct QueryState {
  const float* q;
  int pos;
  float running_max;
  float running_sum;
  float* acc;
};

// Chunks [ch_begin, ch_end) of the context for NQ queries at once: the queries' chains are
// independent, which keeps the FMA units busy. Each query sees exactly the operations it would
// see alone (scores sum over d in order; chunks update a running max and sum in order), so its
// result never depends on which queries share the call.
template <int NQ>
[[gnu::always_inline]] inline void attend_chunk_range(QueryState* qs, int D, float scale,
                                                      const float* kts, const float* vts,
                                                      int ch_begin, int ch_end) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int ch = ch_begin; ch < ch_end; ++ch) {
    const float* kt = kts + static_cast<size_t>(ch) * D * kChunk;
    const float* vt = vts + static_cast<size_t>(ch) * D * kChunk;
    float s[NQ][kChunk] = {};
    for (int d = 0; d < D; ++d) {
      for (int i = 0; i < NQ; ++i) {
        const float qd = qs[i].q[d];
        for (int o = 0; o < kChunk; ++o) s[i][o] += qd * kt[d * kChunk + o];
      }
    }
    const int first = ch * kChunk;
    float p[NQ][kChunk];
    float correction[NQ];
    for (int i = 0; i < NQ; ++i) {
      float chunk_max = kNegInf;
      for (int o = 0; o < kChunk; ++o) {
        s[i][o] = first + o <= qs[i].pos ? s[i][o] * scale : kNegInf;
        chunk_max = std::max(chunk_max, s[i][o]);
      }
      const float new_max = std::max(qs[i].running_max, chunk_max);
      correction[i] = exp_nonpositive(qs[i].running_max - new_max);
      float chunk_sum = 0.0f;
      for (int o = 0; o < kChunk; ++o) {
        p[i][o] = first + o <= qs[i].pos ? exp_nonpositive(s[i][o] - new_max) : 0.0f;
      }
      for (int o = 0; o < kChunk; ++o) chunk_sum += p[i][o];
      qs[i].running_sum = qs[i].running_sum * correction[i] + chunk_sum;
      qs[i].running_max = new_max;
    }
    // v[d] = sum over o in order of p[o] * V[o][d]: a vector loop over d for each o.
    float v[NQ][kMaxHeadSize];
    for (int i = 0; i < NQ; ++i) {
      for (int d = 0; d < D; ++d) v[i][d] = 0.0f;
    }
    for (int o = 0; o < kChunk; ++o) {
      const float* vo = vt + o * D;
      for (int i = 0; i < NQ; ++i) {
        const float po = p[i][o];
        for (int d = 0; d < D; ++d) v[i][d] += po * vo[d];
      }
    }
    for (int i = 0; i < NQ; ++i) {
      for (int d = 0; d < D; ++d) qs[i].acc[d] = qs[i].acc[d] * correction[i] + v[i][d];
    }
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void attend_chunks_1(
    QueryState* qs, int D, float scale, const float* kts, const float* vts, int ch_begin,
    int ch_end) {
  attend_chunk_range<1>(qs, D, scale, kts, vts, ch_begin, ch_end);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void attend_chunks_4(
    QueryState* qs, int D, float scale, const float* kts, const float* vts, int ch_begin,
    int ch_end) {
  attend_chunk_range<4>(qs, D, scale, kts, vts, ch_begin, ch_end);
}

// All query tokens of one request for the query heads of one kv head: the context is gathered
// into tiles once and shared by every token and head of the group; queries go 4 at a time over
// the chunks they share, then alone over the rest of their own context.
template <typename T>
void attend_group(const float* q, int num_heads, int kv_head, int group, int begin, int end,
                  std::span<const int32_t> positions, const int32_t* blocks,
                  const KVCacheLayer& cache, float scale, float* out, std::vector<float>& tiles,
                  std::vector<float>& acc, std::vector<QueryState>& qs) {
  const int D = cache.spec.head_size;
  int max_pos = 0;
  for (int t = begin; t < end; ++t) max_pos = std::max(max_pos, positions[static_cast<size_t>(t)]);
  const int num_chunks = max_pos / kChunk + 1;
  const size_t tile = static_cast<size_t>(D) * kChunk;
  tiles.resize(2 * static_cast<size_t>(num_chunks) * tile);
  float* kts = tiles.data();
  float* vts = kts + static_cast<size_t>(num_chunks) * tile;
  for (int ch = 0; ch < num_chunks; ++ch) {
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
  // The first chunk holds position 0, so running_max is finite after it.
  size_t i = 0;
  for (; i + 4 <= qs.size(); i += 4) {
    int shared = INT32_MAX;
    for (size_t j = i; j < i + 4; ++j) shared = std::min(shared, qs[j].pos / kChunk + 1);
    attend_chunks_4(&qs[i], D, scale, kts, vts, 0, shared);
    for (size_t j = i; j < i + 4; ++j)
      attend_chunks_1(&qs[j], D, scale, kts, vts, shared, qs[j].pos / kChunk + 1);
  }
  for (; i < qs.size(); ++i) attend_chunks_1(&qs[i], D, scale, kts, vts, 0, qs[i].pos / kChunk + 1);

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
#pragma omp parallel
  {
    std::vector<float> tiles, acc;  // reused by every (request, kv head) of this thread
    std::vector<QueryState> qs;
#pragma omp for schedule(dynamic, 1) collapse(2)
    for (int r = 0; r < batch.num_reqs; ++r) {
      for (int g = 0; g < s.num_kv_heads; ++g) {
        const int32_t* blocks =
            batch.block_table.data() + static_cast<size_t>(r) * batch.max_blocks_per_req;
        attend(q, num_heads, g, group, batch.query_start_loc[static_cast<size_t>(r)],
               batch.query_start_loc[static_cast<size_t>(r) + 1], batch.positions, blocks, cache,
               scale, out, tiles, acc, qs);
      }
    }
  }
}

}  // namespace pagedllm::cpu
