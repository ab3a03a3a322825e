#include "model/llama_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "format/dequant.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/paged_attention.h"
#include "model/rope.h"

namespace pagedllm {

size_t LlamaModel::linear_weight_bytes() const {
  size_t total = output_.weight_bytes();
  for (const LayerLinears& l : linears_) {
    total += l.qkv.weight_bytes() + l.o.weight_bytes() + l.gate_up.weight_bytes() +
             l.down.weight_bytes();
  }
  return total;
}

KVCacheSpec LlamaModel::kv_cache_spec(const ModelConfig& c, int num_blocks, int block_size,
                                      DType dtype) {
  return KVCacheSpec{c.n_layers, num_blocks, block_size, c.n_kv_heads, c.head_dim, dtype};
}

namespace {

// Once a weight lives in a packed copy, its pages of the mapped file are not needed: give them
// back so that resident memory holds the weights once. (The embedding stays: rows are gathered
// from it, and a tied output shares it.)
void release_mapped_pages(const ModelWeights& w, const WeightMatrix& m) {
  // A tied output layer (or its vocab share) is the embedding, which stays in use.
  const auto* first = static_cast<const uint8_t*>(m.data);
  if (first >= w.token_embedding.row(0) && first < w.token_embedding.row(w.token_embedding.rows))
    return;
  for (const std::vector<uint8_t>& copy : w.owned_bytes) {
    if (m.data != copy.data()) continue;
    // A tensor-parallel column slice (loader/weight_shard.h), copied at load and packed now: its
    // whole pages go back to the kernel (private anonymous pages read as zeros afterwards, and
    // nothing reads them).
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(copy.data());
    const uintptr_t first = (begin + page - 1) / page * page;
    const uintptr_t last = (begin + copy.size()) / page * page;
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
    return;
  }
  const auto begin = reinterpret_cast<uintptr_t>(m.data);
  const auto end = begin + m.row_stride() * static_cast<size_t>(m.rows);
  for (const auto& file : w.files) {
    const auto fb = reinterpret_cast<uintptr_t>(file->data());
    if (begin < fb || end > fb + file->size()) continue;
    file->release(begin - fb, end - begin);
  }
}

}  // namespace

LlamaModel::LlamaModel(std::shared_ptr<const ModelWeights> weights, PagedKVCache& kv_cache,
                       int max_tokens, const std::function<void(size_t, size_t)>& progress)
    : LlamaModel(std::move(weights), max_tokens, progress) {
  bind_kv_cache(kv_cache);
}

void LlamaModel::bind_kv_cache(PagedKVCache& cache) {
  const ModelConfig& c = weights_->config;
  const auto& spec = cache.spec();
  if (spec.num_layers != c.n_layers || spec.num_kv_heads != c.n_kv_heads ||
      spec.head_size != c.head_dim) {
    throw std::invalid_argument("KV cache geometry does not match the model");
  }
  kv_cache_ = &cache;
}

LlamaModel::LlamaModel(std::shared_ptr<const ModelWeights> weights, int max_tokens,
                       const std::function<void(size_t, size_t)>& progress,
                       TensorParallelShard tensor_parallel)
    : weights_(std::move(weights)),
      tensor_parallel_(std::move(tensor_parallel)),
      max_tokens_(max_tokens) {
  const ModelConfig& c = weights_->config;
  const size_t total = weights_->layers.size() + 1;
  for (const LayerWeights& lw : weights_->layers) {
    linears_.push_back(LayerLinears{LinearLayer({&lw.wq, &lw.wk, &lw.wv}, {lw.bq, lw.bk, lw.bv}),
                                    LinearLayer({&lw.wo}), LinearLayer({&lw.w_gate, &lw.w_up}),
                                    LinearLayer({&lw.w_down})});
    for (const WeightMatrix* m :
         {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) {
      release_mapped_pages(*weights_, *m);
    }
    if (progress) progress(linears_.size(), total);
  }
  output_ = LinearLayer({&weights_->output});
  release_mapped_pages(*weights_, weights_->output);
  if (progress) progress(total, total);
  inv_freq_ = rope_inverse_frequencies(c);
  if (weights_->rope_freq_factors) {
    for (size_t i = 0; i < inv_freq_.size(); ++i) inv_freq_[i] /= weights_->rope_freq_factors[i];
  }
  const auto t = static_cast<size_t>(max_tokens);
  x_.resize(t * c.dim);
  xb_.resize(t * std::max(c.dim, c.q_dim()));
  qkv_.resize(t * (c.q_dim() + 2 * c.kv_dim()));
  q_.resize(t * c.q_dim());
  attn_.resize(t * c.q_dim());
  gate_up_.resize(t * 2 * c.hidden_dim);
  gate_.resize(t * c.hidden_dim);
}

void LlamaModel::embed(const ModelInputs& in, float* out) const {
  const auto& e = weights_->token_embedding;
  const auto dim = static_cast<size_t>(weights_->config.dim);
  const auto ids = in.input_ids_actual();
  if (in.embed_values.size() != in.embed_rows.size() * dim) {
    throw std::invalid_argument("embed_values must hold hidden_size values per embed row");
  }
  for (size_t i = 0; i < in.embed_rows.size(); ++i) {
    const int32_t row = in.embed_rows[i];
    if (row < 0 || static_cast<size_t>(row) >= ids.size())
      throw std::out_of_range("embed row outside the step's tokens");
  }
  for (const int32_t id : ids) {
    if (id < 0 || id >= e.rows) throw std::out_of_range("token id outside the vocabulary");
  }
  // Over the threads for a prefill: on one thread a quantized table's rows (and the first touch
  // of their pages) left the others waiting (llama-110m q8_0 pp512, perf: about 1 % of the step).
  const auto tokens = static_cast<int64_t>(ids.size());
#pragma omp parallel for schedule(static) if (tokens * static_cast <int64_t>(dim) > 65536)
  for (int64_t t = 0; t < tokens; ++t) {
    dequantize_row(e.dtype, e.row(ids[static_cast<size_t>(t)]), out + static_cast<size_t>(t) * dim,
                   static_cast<int64_t>(dim));
  }
  for (size_t i = 0; i < in.embed_rows.size(); ++i) {
    std::copy_n(in.embed_values.data() + i * dim, dim,
                out + static_cast<size_t>(in.embed_rows[i]) * dim);
  }
}

void LlamaModel::compute_rope_angles(const ModelInputs& in) {
  const std::vector<int>& sections = weights_->config.mrope_section;
  if (in.mrope_positions.empty()) {
    cpu::rope_angles(in.positions_actual(), inv_freq_, rope_);
    return;
  }
  if (sections.empty())
    throw std::invalid_argument("this model takes 1-D positions, not M-RoPE positions");
  const int64_t tokens = in.num_actual_tokens;
  if (in.mrope_stride < tokens ||
      in.mrope_positions.size() < static_cast<size_t>(2 * in.mrope_stride + tokens))
    throw std::invalid_argument(
        "mrope_positions must hold 3 rows of mrope_stride >= the step's tokens");
  mrope_angles(in.mrope_positions, in.mrope_stride, tokens, inv_freq_, sections, rope_);
}

void LlamaModel::rope_and_cache(const LayerWeights& w, const ModelInputs& in, int tokens,
                                const KVCacheLayer& cache) {
  const ModelConfig& c = weights_->config;
  const int qd = c.q_dim(), kvd = c.kv_dim(), width = qd + 2 * kvd, half = rope_.half;
  const auto slots = in.slot_mapping_actual();
  // One pass per token over its qkv row while it is in L1: q (normed first where the model has
  // q/k norms, as Qwen3) rotated into q_, k the same in place. Then K and V go to the cache
  // from the qkv rows, a block's worth of a prefill's tokens at a time (reshape_and_cache's
  // runs), where one token at a time writes one element of each K row of its block.
#pragma omp parallel for schedule(static) if (tokens > 8)
  for (int t = 0; t < tokens; ++t) {
    float* row = qkv_.data() + static_cast<size_t>(t) * width;
    const float* cos = rope_.cos.data() + static_cast<size_t>(t) * half;
    const float* sin = rope_.sin.data() + static_cast<size_t>(t) * half;
    float* q = q_.data() + static_cast<size_t>(t) * qd;
    float* k = row + qd;
    std::copy_n(row, qd, q);
    if (w.q_norm) {
      cpu::rms_norm(q, w.q_norm, q, c.n_heads, c.head_dim, c.norm_eps);
      cpu::rms_norm(k, w.k_norm, k, c.n_kv_heads, c.head_dim, c.norm_eps);
    }
    cpu::rope_heads(q, c.n_heads, cos, sin, half, weights_->rope_style);
    cpu::rope_heads(k, c.n_kv_heads, cos, sin, half, weights_->rope_style);
  }
  cpu::reshape_and_cache(qkv_.data() + qd, qkv_.data() + qd + kvd, slots, cache, width);
}

cpu::AttentionBatch LlamaModel::gather_output_rows(const ModelInputs& in) {
  const ModelConfig& c = weights_->config;
  out_positions_.resize(static_cast<size_t>(in.num_logits));
  // logits_indices rise with r, so each row moves towards the front over rows already moved.
  for (int r = 0; r < in.num_logits; ++r) {
    const auto ru = static_cast<size_t>(r);
    const auto t = static_cast<size_t>(in.logits_indices[ru]);
    if (t != ru) {
      std::copy_n(x_.data() + t * c.dim, c.dim, x_.data() + ru * c.dim);
      std::copy_n(q_.data() + t * c.q_dim(), c.q_dim(), q_.data() + ru * c.q_dim());
    }
    out_positions_[ru] = in.positions[t];
  }
  // Request r's queries are its logits rows, so logits_start_loc is their query_start_loc.
  return cpu::AttentionBatch{in.num_reqs, in.logits_start_loc_view(), out_positions_,
                             in.block_table, in.max_blocks_per_req};
}

void LlamaModel::attention_block(int layer, const ModelInputs& in, int tokens, bool out_rows) {
  const ModelConfig& c = weights_->config;
  const LayerWeights& w = weights_->layers[static_cast<size_t>(layer)];
  cpu::rms_norm(x_.data(), w.attn_norm, xb_.data(), tokens, c.dim, c.norm_eps);
  const LayerLinears& lin = linears_[static_cast<size_t>(layer)];
  lin.qkv.apply(xb_.data(), tokens, qkv_.data());
  KVCacheLayer cache = kv_cache_->layer(layer);
  rope_and_cache(w, in, tokens, cache);
  const cpu::AttentionBatch batch =
      out_rows ? gather_output_rows(in)
               : cpu::AttentionBatch{in.num_reqs, in.query_start_loc_view(), in.positions_actual(),
                                     in.block_table, in.max_blocks_per_req};
  const int rows = out_rows ? in.num_logits : tokens;
  cpu::paged_attention(q_.data(), c.n_heads, batch, cache, attn_.data());
  lin.o.apply(attn_.data(), rows, xb_.data());
  reduce_partial_sums(rows);
  cpu::add_inplace(x_.data(), xb_.data(), static_cast<int64_t>(rows) * c.dim);
}

void LlamaModel::mlp_block(int layer, int tokens) {
  const ModelConfig& c = weights_->config;
  const LayerWeights& w = weights_->layers[static_cast<size_t>(layer)];
  cpu::rms_norm(x_.data(), w.ffn_norm, xb_.data(), tokens, c.dim, c.norm_eps);
  const LayerLinears& lin = linears_[static_cast<size_t>(layer)];
  lin.gate_up.apply(xb_.data(), tokens, gate_up_.data());
  cpu::swiglu(gate_up_.data(), tokens, c.hidden_dim, gate_.data());
  lin.down.apply(gate_.data(), tokens, xb_.data());
  reduce_partial_sums(tokens);
  cpu::add_inplace(x_.data(), xb_.data(), static_cast<int64_t>(tokens) * c.dim);
}

void LlamaModel::reduce_partial_sums(int rows) {
  if (!tensor_parallel_.all_reduce) return;
  tensor_parallel_.all_reduce(xb_.data(),
                              static_cast<size_t>(rows) * static_cast<size_t>(config().dim));
}

void LlamaModel::forward(const ModelInputs& in, std::span<float> logits) {
  const ModelConfig& c = weights_->config;
  const int tokens = in.num_actual_tokens;
  if (tokens > max_tokens_)
    throw std::length_error("step has more tokens than the model's workspace");
  if (!kv_cache_) throw std::logic_error("forward() before bind_kv_cache()");
  embed(in, x_.data());
  compute_rope_angles(in);
  // Only the tokens at logits_indices need logits, so past the last layer's K and V only
  // those rows are computed, as llama.cpp does (a prefill's last layer shrinks to one row).
  // Each row's result is the same either way (the kernels' orders do not depend on the batch),
  // but for the bf16 products oneDNN takes from 8 rows up.
  for (int l = 0; l < c.n_layers; ++l) {
    const bool last_layer = l + 1 == c.n_layers;
    attention_block(l, in, tokens, last_layer);
    mlp_block(l, last_layer ? in.num_logits : tokens);
  }
  last_.resize(static_cast<size_t>(in.num_logits) * c.dim);
  cpu::rms_norm(x_.data(), weights_->final_norm, last_.data(), in.num_logits, c.dim, c.norm_eps);
  if (!tensor_parallel_.gather_logits) {
    output_.apply(last_.data(), in.num_logits, logits.data());
    return;
  }
  // This rank's share of the vocabulary, then rank 0 puts the shares side by side.
  share_logits_.resize(static_cast<size_t>(in.num_logits) *
                       static_cast<size_t>(weights_->output.rows));
  output_.apply(last_.data(), in.num_logits, share_logits_.data());
  tensor_parallel_.gather_logits(share_logits_.data(), in.num_logits, logits);
}

}  // namespace pagedllm
