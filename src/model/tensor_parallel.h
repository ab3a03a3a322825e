// What a model needs to run as one rank of a tensor-parallel job (docs/SCALE-OUT.md): its
// weights are the rank's shard (loader/weight_shard.h), and after each row-parallel product
// (o_proj, down_proj) it sums the ranks' partial results, and its output layer computes only
// its share of the vocabulary, which rank 0 gathers. The transport lives above the model.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

namespace pagedllm {

struct TensorParallelShard {
  // Sums `count` floats over the ranks, in place; null on one process.
  std::function<void(float* data, size_t count)> all_reduce;
  // Assembles whole logits rows on rank 0 from every rank's `rows` x share columns
  // (loader/weight_shard.h's vocab_share), `mine` row-major; `whole` is [rows, vocab] on rank 0
  // and empty elsewhere. Null on one process.
  std::function<void(const float* mine, int rows, std::span<float> whole)> gather_logits;
};

// Whole logits rows from the ranks' shares as a gather leaves them, rank after rank: `gathered`
// holds rank 0's [rows, share 0], then rank 1's [rows, share 1], and so on.
//   Worked example, vocab 5 over 2 ranks (shares of 2 and 3 tokens), 2 rows:
//   gathered = a0 a1 | b0 b1 || c2 c3 c4 | d2 d3 d4   (rank 0: rows a, b; rank 1: rows c, d)
//   whole    = a0 a1 c2 c3 c4 | b0 b1 d2 d3 d4
void place_vocab_shares(const float* gathered, int rows, int vocab, int ranks,
                        std::span<float> whole);

}  // namespace pagedllm
