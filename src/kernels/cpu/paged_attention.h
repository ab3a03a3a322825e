// Attention over the paged KV cache, for any mix of decodes and (chunked) prefills.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/kv_cache.h"

namespace pagedllm::cpu {

// What the kernels need of one step's attention metadata.
struct AttentionBatch {
  int num_reqs = 0;
  std::span<const int32_t> query_start_loc;  // [num_reqs + 1]
  std::span<const int32_t> positions;        // [num tokens]
  std::span<const int32_t> block_table;      // [num_reqs, max_blocks_per_req]
  int max_blocks_per_req = 0;
};

// Writes each token's K and V (rows of num_kv_heads * head_size values, token t's at
// key + t * row_stride and value + t * row_stride; row_stride 0 means packed rows) to its slot;
// slot -1 (padding) is skipped. A stride lets K and V be read in place from a fused qkv row.
void reshape_and_cache(const float* key, const float* value, std::span<const int64_t> slot_mapping,
                       KVCacheLayer cache, int row_stride = 0);

// out[t, h] = softmax(q[t, h] . K[0..p] / sqrt(head_size)) . V[0..p] where p is token t's
// position: a token sees keys 0..p of its own request (causal by position), read through the
// block table. GQA: query head h reads kv head h / (num_heads / num_kv_heads). The softmax is
// online (running max and sum), so long contexts need no score buffer and stay finite.
// A token's result depends only on its own request's cache, never on the rest of the batch.
void paged_attention(const float* q, int num_heads, const AttentionBatch& batch,
                     const KVCacheLayer& cache, float* out);

}  // namespace pagedllm::cpu
