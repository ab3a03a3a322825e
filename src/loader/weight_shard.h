// Megatron-style tensor parallelism at load: one rank's shard of a model (docs/SCALE-OUT.md).
//
// Rank r of N keeps the r-th N-th of the attention heads (the rows of Q, K and V, and so the
// KV cache holds only its KV heads) and of the FFN width (the rows of gate and up): the
// column-parallel products, which need no communication. o_proj and down_proj keep the
// matching input columns (row-parallel): each rank's product is a partial sum that the ranks
// add up with one all-reduce. Embedding and norms are replicated. The output layer is
// vocab-parallel: rank r keeps the rows of its share of the vocabulary (vocab_share), computes
// those logits, and rank 0 gathers the shares into whole rows.
//
// Row slices are views of the mapped file, and column slices are copied row by row from it, so
// a rank touches only its part of the file; quantized rows are cut on block boundaries.
#pragma once

#include "loader/model_weights.h"

namespace pagedllm {

// Throws ModelLoadError when the heads, KV heads or FFN width do not divide by `ranks`
// (KV heads are split, never replicated), or a column slice would cut a quantization block.
ModelWeights shard_weights(ModelWeights full, int rank, int ranks);

// Rank r's rows of a vocabulary of `vocab` tokens: [vocab * r / ranks, vocab * (r + 1) / ranks),
// so any vocabulary splits, the shares differing by at most one row.
struct VocabShare {
  int begin = 0;
  int count = 0;
};
VocabShare vocab_share(int vocab, int rank, int ranks);

}  // namespace pagedllm
