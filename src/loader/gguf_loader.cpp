#include "loader/gguf_loader.h"

#include <cstring>

#include "kernels/cpu/dequant.h"

namespace pagedllm {

namespace {

class TensorBinder {
 public:
  TensorBinder(const GGUFFile& g, ModelWeights& w) : g_(g), w_(w) {}

  const GGUFTensor& get(const std::string& name) const {
    const GGUFTensor* t = g_.tensor(name);
    if (!t) throw ModelLoadError(g_.path() + ": missing tensor '" + name + "'");
    return *t;
  }
  bool has(const std::string& name) const { return g_.tensor(name) != nullptr; }

  DType dtype_of(const GGUFTensor& t) const {
    const auto d = dtype_of_ggml_type(t.ggml_type);
    if (!d) {
      throw ModelLoadError(g_.path() + ": tensor '" + t.name + "' has type " +
                           ggml_type_name(t.ggml_type) +
                           ", which is not supported (F32, F16, BF16, Q8_0, Q4_0)");
    }
    return *d;
  }

  void expect_shape(const GGUFTensor& t, std::vector<int64_t> dims) const {
    if (t.dims != dims) {
      auto show = [](const std::vector<int64_t>& v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
        return s + "]";
      };
      throw ModelLoadError(g_.path() + ": tensor '" + t.name + "' has shape " + show(t.dims) +
                           ", expected " + show(dims));
    }
  }

  // A [rows, cols] linear weight (GGUF dims [cols, rows]).
  WeightMatrix matrix(const std::string& name, int rows, int cols) {
    const GGUFTensor& t = get(name);
    expect_shape(t, {cols, rows});
    const DType dtype = dtype_of(t);
    if (dtype == DType::kF32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0) {
      return WeightMatrix{DType::kF32, rows, cols, copy_to_f32(t, int64_t{rows} * cols)};
    }
    return WeightMatrix{dtype, rows, cols, t.data};
  }

  // A 1-D f32 vector of n values, converted if stored otherwise.
  const float* vector(const std::string& name, int n) {
    const GGUFTensor& t = get(name);
    expect_shape(t, {n});
    const DType dtype = dtype_of(t);
    if (dtype == DType::kF32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0) {
      return reinterpret_cast<const float*>(t.data);
    }
    return copy_to_f32(t, n);
  }
  const float* optional_vector(const std::string& name, int n) {
    return has(name) ? vector(name, n) : nullptr;
  }

 private:
  const float* copy_to_f32(const GGUFTensor& t, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    cpu::dequantize_row(dtype_of(t), t.data, out.data(), n);
    return w_.own(std::move(out));
  }

  const GGUFFile& g_;
  ModelWeights& w_;
};

ModelConfig read_config(const GGUFFile& g, const std::string& arch) {
  auto key = [&](const std::string& k) { return arch + "." + k; };
  ModelConfig c;
  c.architecture = arch;
  c.dim = static_cast<int>(g.get_int(key("embedding_length")));
  c.n_layers = static_cast<int>(g.get_int(key("block_count")));
  c.hidden_dim = static_cast<int>(g.get_int(key("feed_forward_length")));
  c.n_heads = static_cast<int>(g.get_int(key("attention.head_count")));
  c.n_kv_heads = static_cast<int>(g.find_int(key("attention.head_count_kv")).value_or(c.n_heads));
  c.head_dim = static_cast<int>(
      g.find_int(key("attention.key_length")).value_or(c.n_heads > 0 ? c.dim / c.n_heads : 0));
  c.max_seq_len = static_cast<int>(g.get_int(key("context_length")));
  c.norm_eps =
      static_cast<float>(g.find_float(key("attention.layer_norm_rms_epsilon")).value_or(1e-5));
  c.rope_theta = static_cast<float>(g.find_float(key("rope.freq_base")).value_or(10000.0));
  if (auto bos = g.find_int("tokenizer.ggml.bos_token_id"))
    c.bos_token_id = static_cast<int32_t>(*bos);
  if (auto eos = g.find_int("tokenizer.ggml.eos_token_id"))
    c.eos_token_id = static_cast<int32_t>(*eos);
  return c;
}

}  // namespace

ModelWeights load_gguf(const std::string& path) {
  return load_gguf(GGUFFile(path));
}

ModelWeights load_gguf(const GGUFFile& g) {
  const std::string arch = g.get_string("general.architecture");
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3") {
    throw ModelLoadError(g.path() + ": architecture '" + arch +
                         "' is not supported (llama, qwen2, qwen3)");
  }
  ModelWeights w;
  w.source = g.path();
  w.files.push_back(g.file());
  w.config = read_config(g, arch);
  TensorBinder b(g, w);
  const GGUFTensor& embd = b.get("token_embd.weight");
  if (embd.dims.size() != 2) throw ModelLoadError(g.path() + ": token_embd.weight must be 2-D");
  w.config.vocab_size = static_cast<int>(embd.dims[1]);
  w.config.tied_embeddings = !b.has("output.weight");
  w.config.qkv_bias = b.has("blk.0.attn_q.bias");
  w.config.qk_norm = b.has("blk.0.attn_q_norm.weight");
  w.config.validate(g.path());
  const ModelConfig& c = w.config;
  // llama.cpp permutes Q/K of `llama` weights to interleaved pairs; qwen2/qwen3 stay NeoX.
  w.rope_style = arch == "llama" ? RopeStyle::kInterleaved : RopeStyle::kNeox;

  w.token_embedding = b.matrix("token_embd.weight", c.vocab_size, c.dim);
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    lw.attn_norm = b.vector(p + "attn_norm.weight", c.dim);
    lw.wq = b.matrix(p + "attn_q.weight", c.q_dim(), c.dim);
    lw.wk = b.matrix(p + "attn_k.weight", c.kv_dim(), c.dim);
    lw.wv = b.matrix(p + "attn_v.weight", c.kv_dim(), c.dim);
    lw.wo = b.matrix(p + "attn_output.weight", c.dim, c.q_dim());
    if (c.qkv_bias) {
      lw.bq = b.vector(p + "attn_q.bias", c.q_dim());
      lw.bk = b.vector(p + "attn_k.bias", c.kv_dim());
      lw.bv = b.vector(p + "attn_v.bias", c.kv_dim());
    }
    if (c.qk_norm) {
      lw.q_norm = b.vector(p + "attn_q_norm.weight", c.head_dim);
      lw.k_norm = b.vector(p + "attn_k_norm.weight", c.head_dim);
    }
    lw.ffn_norm = b.vector(p + "ffn_norm.weight", c.dim);
    lw.w_gate = b.matrix(p + "ffn_gate.weight", c.hidden_dim, c.dim);
    lw.w_up = b.matrix(p + "ffn_up.weight", c.hidden_dim, c.dim);
    lw.w_down = b.matrix(p + "ffn_down.weight", c.dim, c.hidden_dim);
  }
  w.final_norm = b.vector("output_norm.weight", c.dim);
  w.output = c.tied_embeddings ? w.token_embedding : b.matrix("output.weight", c.vocab_size, c.dim);
  w.rope_freq_factors = b.optional_vector("rope_freqs.weight", c.head_dim / 2);
  return w;
}

}  // namespace pagedllm
