// Binds a Llama-family model's weights by role, with names from the architecture's table, for
// any file format: the GGUF and Hugging Face loaders differ only in how a named tensor is read.
#pragma once

#include "loader/model_arch.h"
#include "loader/model_weights.h"

namespace pagedllm {

// Binder: has(name), matrix(name, rows, cols) -> WeightMatrix and vector(name, n) -> const
// float*, each throwing ModelLoadError for a missing or misshapen tensor. Reads whether the
// file has QKV biases, Q/K norms and a separate output matrix into w.config, validates it
// (naming `source`) and binds every weight the configuration needs.
template <typename Binder>
void bind_llama_weights(Binder& b, const ModelArch& arch, TensorFileFormat format,
                        const std::string& source, ModelWeights& w) {
  auto name = [&](WeightRole role, int layer = 0) {
    return tensor_name(arch, role, format, layer);
  };
  w.config.qkv_bias = b.has(name(WeightRole::kBq));
  w.config.qk_norm = b.has(name(WeightRole::kQNorm));
  if (!b.has(name(WeightRole::kOutput))) w.config.tied_embeddings = true;
  w.config.validate(source);
  const ModelConfig& c = w.config;
  w.token_embedding = b.matrix(name(WeightRole::kEmbedding), c.vocab_size, c.dim);
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    lw.attn_norm = b.vector(name(WeightRole::kAttnNorm, l), c.dim);
    lw.wq = b.matrix(name(WeightRole::kWq, l), c.q_dim(), c.dim);
    lw.wk = b.matrix(name(WeightRole::kWk, l), c.kv_dim(), c.dim);
    lw.wv = b.matrix(name(WeightRole::kWv, l), c.kv_dim(), c.dim);
    lw.wo = b.matrix(name(WeightRole::kWo, l), c.dim, c.q_dim());
    if (c.qkv_bias) {
      lw.bq = b.vector(name(WeightRole::kBq, l), c.q_dim());
      lw.bk = b.vector(name(WeightRole::kBk, l), c.kv_dim());
      lw.bv = b.vector(name(WeightRole::kBv, l), c.kv_dim());
    }
    if (c.qk_norm) {
      lw.q_norm = b.vector(name(WeightRole::kQNorm, l), c.head_dim);
      lw.k_norm = b.vector(name(WeightRole::kKNorm, l), c.head_dim);
    }
    lw.ffn_norm = b.vector(name(WeightRole::kFfnNorm, l), c.dim);
    lw.w_gate = b.matrix(name(WeightRole::kGate, l), c.hidden_dim, c.dim);
    lw.w_up = b.matrix(name(WeightRole::kUp, l), c.hidden_dim, c.dim);
    lw.w_down = b.matrix(name(WeightRole::kDown, l), c.dim, c.hidden_dim);
  }
  w.final_norm = b.vector(name(WeightRole::kFinalNorm), c.dim);
  w.output = c.tied_embeddings ? w.token_embedding
                               : b.matrix(name(WeightRole::kOutput), c.vocab_size, c.dim);
}

}  // namespace pagedllm
