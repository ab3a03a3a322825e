#include "loader/gguf_loader.h"

#include <cstring>

#include "format/dequant.h"
#include "loader/model_arch.h"
#include "loader/weight_binding.h"

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
      throw ModelLoadError(
          g_.path() + ": tensor '" + t.name + "' has type " + ggml_type_name(t.ggml_type) +
          ", which is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
          "IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS)");
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
    dequantize_row(dtype_of(t), t.data, out.data(), n);
    return w_.own(std::move(out));
  }

  const GGUFFile& g_;
  ModelWeights& w_;
};

// llama.cpp's rope.dimension_sections: the M-RoPE sizes padded to 4 with zeros.
std::vector<int> read_mrope_section(const GGUFFile& g, const std::string& key) {
  const GGUFValue* v = g.find(key);
  if (!v) return {};
  if (v->type != GGUFType::kArray || v->ints.size() < 3)
    throw ModelLoadError(g.path() + ": " + key + " must be an array of at least 3 integers");
  std::vector<int> sections;
  for (size_t i = 0; i < v->ints.size(); ++i) {
    const int64_t s = v->ints[i];
    if (s < 0 || s > (1 << 20) || (i >= 3 && s != 0))
      throw ModelLoadError(g.path() + ": " + key + " has a bad value " + std::to_string(s));
    if (i < 3) sections.push_back(static_cast<int>(s));
  }
  return sections;
}

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
  c.mrope_section = read_mrope_section(g, key("rope.dimension_sections"));
  if (arch == "qwen2vl" && c.mrope_section.empty())
    throw ModelLoadError(g.path() + ": " + key("rope.dimension_sections") + " is missing");
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
  const std::string arch_name = g.get_string("general.architecture");
  const ModelArch* arch = find_arch(arch_name);
  if (!arch) {
    throw ModelLoadError(g.path() + ": architecture '" + arch_name + "' is not supported (" +
                         supported_arch_names() + ")");
  }
  ModelWeights w;
  w.source = g.path();
  w.files.push_back(g.file());
  w.config = read_config(g, arch_name);
  TensorBinder b(g, w);
  const std::string embedding = tensor_name(*arch, WeightRole::kEmbedding, TensorFileFormat::kGguf);
  const GGUFTensor& embd = b.get(embedding);
  if (embd.dims.size() != 2) throw ModelLoadError(g.path() + ": " + embedding + " must be 2-D");
  w.config.vocab_size = static_cast<int>(embd.dims[1]);
  w.config.tied_embeddings = false;
  bind_llama_weights(b, *arch, TensorFileFormat::kGguf, g.path(), w);
  w.rope_style = arch->gguf_rope_style;
  w.rope_freq_factors = b.optional_vector(
      tensor_name(*arch, WeightRole::kRopeFreqs, TensorFileFormat::kGguf), w.config.head_dim / 2);
  return w;
}

}  // namespace pagedllm
