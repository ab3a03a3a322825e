#include "loader/weight_shard.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace pagedllm {

namespace {

struct Slice {
  int begin = 0;
  int count = 0;
};

Slice slice_of(int total, int rank, int ranks) {
  const int count = total / ranks;
  return {rank * count, count};
}

WeightMatrix rows_of(const WeightMatrix& m, Slice s) {
  WeightMatrix out = m;
  out.data = m.row(s.begin);
  out.rows = s.count;
  return out;
}

const float* rows_of(const float* bias, Slice s) {
  return bias ? bias + s.begin : nullptr;
}

// The mapped pages of a matrix that is no longer read (its slice was copied out).
void release_source(const ModelWeights& w, const WeightMatrix& m) {
  const auto begin = reinterpret_cast<uintptr_t>(m.data);
  const auto end = begin + m.row_stride() * static_cast<size_t>(m.rows);
  for (const auto& file : w.files) {
    const auto fb = reinterpret_cast<uintptr_t>(file->data());
    if (begin < fb || end > fb + file->size()) continue;
    file->release(begin - fb, end - begin);
  }
}

WeightMatrix columns_of(ModelWeights& w, const WeightMatrix& m, Slice s, const char* name) {
  const int block = block_elements(m.dtype);
  if (s.begin % block != 0 || s.count % block != 0) {
    throw ModelLoadError(w.source + ": " + name + " of " + to_string(m.dtype) + " has " +
                         std::to_string(m.cols) + " columns; a shard of " +
                         std::to_string(s.count) + " would cut its " + std::to_string(block) +
                         "-element blocks (choose another --tensor-parallel-size)");
  }
  const size_t offset = row_bytes(m.dtype, s.begin);
  const size_t stride = row_bytes(m.dtype, s.count);
  std::vector<uint8_t>& bytes = w.owned_bytes.emplace_back(stride * static_cast<size_t>(m.rows));
  for (int r = 0; r < m.rows; ++r) {
    std::memcpy(bytes.data() + stride * static_cast<size_t>(r), m.row(r) + offset, stride);
  }
  release_source(w, m);
  WeightMatrix out = m;
  out.data = bytes.data();
  out.cols = s.count;
  return out;
}

void require_divisible(const ModelWeights& w, int value, int ranks, const char* what) {
  if (value % ranks == 0) return;
  throw ModelLoadError(w.source + ": " + std::to_string(value) + " " + what +
                       " do not divide by --tensor-parallel-size " + std::to_string(ranks) +
                       " (tensor parallelism splits them; they are never replicated)");
}

}  // namespace

VocabShare vocab_share(int vocab, int rank, int ranks) {
  const auto edge = [&](int r) {
    return static_cast<int>(static_cast<int64_t>(vocab) * r / ranks);
  };
  return {edge(rank), edge(rank + 1) - edge(rank)};
}

ModelWeights shard_weights(ModelWeights w, int rank, int ranks) {
  if (ranks <= 1) return w;
  ModelConfig& c = w.config;
  require_divisible(w, c.n_heads, ranks, "attention heads");
  require_divisible(w, c.n_kv_heads, ranks, "KV heads");
  require_divisible(w, c.hidden_dim, ranks, "FFN columns");
  const Slice q = slice_of(c.q_dim(), rank, ranks);
  const Slice kv = slice_of(c.kv_dim(), rank, ranks);
  const Slice ffn = slice_of(c.hidden_dim, rank, ranks);
  for (LayerWeights& l : w.layers) {
    l.wq = rows_of(l.wq, q);
    l.wk = rows_of(l.wk, kv);
    l.wv = rows_of(l.wv, kv);
    l.bq = rows_of(l.bq, q);
    l.bk = rows_of(l.bk, kv);
    l.bv = rows_of(l.bv, kv);
    l.wo = columns_of(w, l.wo, q, "attn_output");
    l.w_gate = rows_of(l.w_gate, ffn);
    l.w_up = rows_of(l.w_up, ffn);
    l.w_down = columns_of(w, l.w_down, ffn, "ffn_down");
  }
  c.n_heads /= ranks;
  c.n_kv_heads /= ranks;
  c.hidden_dim /= ranks;
  const VocabShare share = vocab_share(c.vocab_size, rank, ranks);
  w.output = rows_of(w.output, Slice{share.begin, share.count});
  return w;
}

}  // namespace pagedllm
