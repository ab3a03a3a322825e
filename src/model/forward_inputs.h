// The forward contract: everything one forward pass needs besides the weights and the KV cache,
// the token-level inputs and the attention metadata. The worker's ModelRunner::prepare_inputs()
// fills it and every Model reads it; it sits here, below both, so that the model never depends
// on the worker (as nano-vllm's context sits below its runner and its models).
//
// Vocabulary (as in the design notes):
//   token level   arrays over the scheduled tokens of this step (num_actual_tokens long, or
//                 num_input_tokens with padding);
//   request level arrays over the batch rows (num_reqs long; query_start_loc has one more).
// Rows are ordered decodes first (query length 1), then prefills, so that a decode kernel takes
// the first num_decodes rows and a prefill kernel the rest.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagedllm {

enum class AttentionState {
  kPrefillNoCache,   // every request starts from an empty context
  kPrefillCacheHit,  // only multi-token queries, some over already computed context
  kDecodeOnly,       // every query is one token
  kChunkedPrefill,   // decodes and prefills mixed
};

const char* to_string(AttentionState state);

struct ModelInputs {
  int num_reqs = 0;
  int num_actual_tokens = 0;
  int num_input_tokens = 0;  // num_actual_tokens padded up to a bucket; padding slots are -1
  int max_query_len = 0;
  int max_seq_len = 0;
  AttentionState attn_state = AttentionState::kPrefillNoCache;

  // Split view for decode-specialised kernels (rows are already ordered decodes first).
  int num_decodes = 0;
  int num_decode_tokens = 0;
  int num_prefills = 0;
  int num_prefill_tokens = 0;

  // Request level (capacity max_num_reqs, +1 where noted).
  std::vector<int32_t> num_scheduled_tokens;
  std::vector<int32_t> cu_num_tokens;
  std::vector<int32_t> query_start_loc;  // +1
  std::vector<int32_t> seq_lens;
  std::vector<int32_t> seq_start_loc;        // +1
  std::vector<int32_t> num_computed_tokens;  // context_lens: computed before this step

  // Logits rows: request r owns rows [logits_start_loc[r], logits_start_loc[r + 1]) (+1), and
  // row i is the logits of token logits_indices[i] (capacity: the token capacity). One row per
  // request (its last token) in ordinary steps; several where a step verifies draft tokens.
  // Rows rise with their tokens, so a request's rows follow its scheduled order.
  int num_logits = 0;
  std::vector<int32_t> logits_start_loc;
  std::vector<int32_t> logits_indices;

  // Token level (capacity max_num_batched_tokens, or the largest bucket).
  std::vector<int32_t> req_indices;
  std::vector<int32_t> arange;
  std::vector<int32_t> positions;
  std::vector<int32_t> token_indices;
  std::vector<int32_t> input_ids;
  std::vector<int32_t> block_table_indices;
  std::vector<int32_t> block_numbers;
  std::vector<int32_t> block_offsets;
  std::vector<int64_t> slot_mapping;

  // Rotary positions for M-RoPE models (Qwen2-VL): [3, capacity] row-major, rows temporal,
  // height and width, filled for the actual tokens. Empty for every other model, whose rotary
  // position is `positions`; `positions` always stays the sequence position that the slot
  // mapping and the causal masks use.
  std::vector<int32_t> mrope_positions;
  int mrope_stride = 0;  // elements between the rows of mrope_positions

  // Rows of the step's input embeddings to overwrite, as vLLM's get_input_embeddings with
  // multimodal embeddings: token row embed_rows[i] (an index into this step's tokens) takes
  // embed_values[i * hidden_size, (i + 1) * hidden_size) in place of its token's embedding
  // (the input id at that row is then ignored). Empty: every row is a token embedding.
  std::span<const int32_t> embed_rows;
  std::span<const float> embed_values;

  // Optional additive mask (0 visible, -inf hidden), row-major [attn_mask_rows, attn_mask_cols].
  // PrefillNoCache: one causal [max_query_len, max_query_len] matrix shared by all requests.
  // Others with prefills: one row per token, the causal row of its position, [tokens, max_seq_len].
  // DecodeOnly: none (0 rows).
  std::vector<float> attn_mask;
  int attn_mask_rows = 0;
  int attn_mask_cols = 0;

  // The block table rows of this batch: [num_reqs, max_blocks_per_req], row-major.
  std::span<const int32_t> block_table;
  int max_blocks_per_req = 0;
  int block_size = 0;

  template <typename T>
  static std::span<const T> head(const std::vector<T>& v, int n) {
    return std::span<const T>(v.data(), static_cast<size_t>(n));
  }
  std::span<const int32_t> positions_actual() const { return head(positions, num_actual_tokens); }
  std::span<const int32_t> input_ids_actual() const { return head(input_ids, num_actual_tokens); }
  std::span<const int64_t> slot_mapping_actual() const {
    return head(slot_mapping, num_actual_tokens);
  }
  std::span<const int32_t> query_start_loc_view() const {
    return head(query_start_loc, num_reqs + 1);
  }
  std::span<const int32_t> seq_lens_view() const { return head(seq_lens, num_reqs); }
  std::span<const int32_t> logits_indices_view() const { return head(logits_indices, num_logits); }
  std::span<const int32_t> logits_start_loc_view() const {
    return head(logits_start_loc, num_reqs + 1);
  }
  int num_logits_of(int req) const {
    return logits_start_loc[static_cast<size_t>(req) + 1] -
           logits_start_loc[static_cast<size_t>(req)];
  }
};

}  // namespace pagedllm
