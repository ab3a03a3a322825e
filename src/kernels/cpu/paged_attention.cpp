#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
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

// One query head of one token against its request's context 0..pos.
template <typename T>
void attend_one(const float* q, int kv_head, int pos, const int32_t* blocks,
                const KVCacheLayer& cache, float scale, float* out, float* acc) {
  const auto& s = cache.spec;
  const T* kc = static_cast<const T*>(cache.key);
  const T* vc = static_cast<const T*>(cache.value);
  const int D = s.head_size;
  float running_max = -std::numeric_limits<float>::infinity();
  float running_sum = 0.0f;
  std::fill(acc, acc + D, 0.0f);
  for (int j = 0; j <= pos; ++j) {
    const int64_t block = blocks[j / s.block_size];
    const int offset = j % s.block_size;
    float score = 0.0f;
    for (int d = 0; d < D; ++d)
      score += q[d] * load(kc + cache.key_index(block, kv_head, d, offset));
    score *= scale;
    const float new_max = std::max(running_max, score);
    const float correction = std::exp(running_max - new_max);
    const float weight = std::exp(score - new_max);
    running_sum = running_sum * correction + weight;
    for (int d = 0; d < D; ++d) {
      acc[d] =
          acc[d] * correction + weight * load(vc + cache.value_index(block, kv_head, d, offset));
    }
    running_max = new_max;
  }
  const float inv = 1.0f / running_sum;
  for (int d = 0; d < D; ++d) out[d] = acc[d] * inv;
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
  const auto attend = cache.spec.dtype == DType::kBF16 ? attend_one<uint16_t> : attend_one<float>;
  const auto& s = cache.spec;
  const int D = s.head_size;
  const int group = num_heads / s.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
#pragma omp parallel
  {
    std::vector<float> acc(static_cast<size_t>(D));
#pragma omp for schedule(dynamic, 1) collapse(2)
    for (int r = 0; r < batch.num_reqs; ++r) {
      for (int h = 0; h < num_heads; ++h) {
        const int32_t* blocks =
            batch.block_table.data() + static_cast<size_t>(r) * batch.max_blocks_per_req;
        const int begin = batch.query_start_loc[static_cast<size_t>(r)];
        const int end = batch.query_start_loc[static_cast<size_t>(r) + 1];
        for (int t = begin; t < end; ++t) {
          const size_t offset = (static_cast<size_t>(t) * num_heads + h) * D;
          attend(q + offset, h / group, batch.positions[static_cast<size_t>(t)], blocks, cache,
                 scale, out + offset, acc.data());
        }
      }
    }
  }
}

}  // namespace pagedllm::cpu
