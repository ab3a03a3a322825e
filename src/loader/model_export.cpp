#include "loader/model_export.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>

#include <nlohmann/json.hpp>

#include "format/dequant.h"
#include "format/tensor_writer.h"

namespace pagedllm {

namespace {

struct RoleShape {
  std::vector<int64_t> shape;
  bool permute_rows = false;  // Q/K: rows grouped by head, in a RoPE layout
  int heads = 0;
};

RoleShape shape_of(const ModelConfig& c, WeightRole role) {
  const int64_t d = c.dim, q = c.q_dim(), kv = c.kv_dim(), h = c.hidden_dim, v = c.vocab_size;
  switch (role) {
    case WeightRole::kEmbedding:
    case WeightRole::kOutput:
      return {{v, d}};
    case WeightRole::kAttnNorm:
    case WeightRole::kFfnNorm:
    case WeightRole::kFinalNorm:
      return {{d}};
    case WeightRole::kWq:
      return {{q, d}, true, c.n_heads};
    case WeightRole::kWk:
      return {{kv, d}, true, c.n_kv_heads};
    case WeightRole::kWv:
      return {{kv, d}};
    case WeightRole::kWo:
      return {{d, q}};
    case WeightRole::kBq:
      return {{q}, true, c.n_heads};
    case WeightRole::kBk:
      return {{kv}, true, c.n_kv_heads};
    case WeightRole::kBv:
      return {{kv}};
    case WeightRole::kQNorm:
    case WeightRole::kKNorm:
      return {{c.head_dim}, true, 1};
    case WeightRole::kGate:
    case WeightRole::kUp:
      return {{h, d}};
    case WeightRole::kDown:
      return {{d, h}};
    case WeightRole::kRopeFreqs:
      return {{c.head_dim / 2}};
  }
  return {};
}

// Reorders each head's rows between the interleaved (2i, 2i+1) and rotate-half (i, i + D/2)
// layouts: interleaved row 2i + a is rotate-half row a * D/2 + i.
void permute_rope_rows(std::vector<float>& values, int heads, int head_dim, int64_t cols,
                       RopeStyle from) {
  std::vector<float> out(values.size());
  const int half = head_dim / 2;
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < half; ++i) {
      for (int a = 0; a < 2; ++a) {
        const int64_t inter = int64_t{h} * head_dim + 2 * i + a;
        const int64_t neox = int64_t{h} * head_dim + a * half + i;
        const int64_t src = from == RopeStyle::kInterleaved ? inter : neox;
        const int64_t dst = from == RopeStyle::kInterleaved ? neox : inter;
        std::copy_n(values.begin() + src * cols, cols, out.begin() + dst * cols);
      }
    }
  }
  values.swap(out);
}

struct PlannedTensor {
  std::string name;
  WeightRole role;
  int layer;
  bool is_matrix;
};

std::vector<PlannedTensor> plan(const ModelConfig& c, bool gguf) {
  const ModelArch* arch = find_arch(c.architecture);
  if (!arch) throw std::invalid_argument("cannot export architecture " + c.architecture);
  const TensorFileFormat format = gguf ? TensorFileFormat::kGguf : TensorFileFormat::kHuggingFace;
  std::vector<PlannedTensor> p;
  auto add = [&](WeightRole role, int layer, bool matrix) {
    p.push_back({tensor_name(*arch, role, format, layer), role, layer, matrix});
  };
  add(WeightRole::kEmbedding, 0, true);
  for (int l = 0; l < c.n_layers; ++l) {
    add(WeightRole::kAttnNorm, l, false);
    for (WeightRole r : {WeightRole::kWq, WeightRole::kWk, WeightRole::kWv, WeightRole::kWo})
      add(r, l, true);
    if (c.qkv_bias) {
      for (WeightRole r : {WeightRole::kBq, WeightRole::kBk, WeightRole::kBv}) add(r, l, false);
    }
    if (c.qk_norm) {
      add(WeightRole::kQNorm, l, false);
      add(WeightRole::kKNorm, l, false);
    }
    add(WeightRole::kFfnNorm, l, false);
    for (WeightRole r : {WeightRole::kGate, WeightRole::kUp, WeightRole::kDown}) add(r, l, true);
  }
  add(WeightRole::kFinalNorm, 0, false);
  if (!c.tied_embeddings) add(WeightRole::kOutput, 0, true);
  return p;
}

std::vector<TensorToWrite> tensors_for(const ExportSpec& spec, const WeightSource& source,
                                       bool gguf, RopeStyle target) {
  std::vector<TensorToWrite> out;
  const ModelConfig& c = spec.config;
  for (const PlannedTensor& t : plan(c, gguf)) {
    const RoleShape rs = shape_of(c, t.role);
    DType dtype = t.is_matrix ? spec.dtype : (gguf ? DType::kF32 : spec.dtype);
    const bool sensitive = t.role == WeightRole::kWv || t.role == WeightRole::kDown ||
                           t.role == WeightRole::kOutput ||
                           (t.role == WeightRole::kEmbedding && c.tied_embeddings);
    if (t.is_matrix && sensitive && spec.sensitive_dtype) dtype = *spec.sensitive_dtype;
    // Block-quantized rows must hold whole blocks; other rows stay f32, as llama.cpp falls back.
    if (rs.shape.back() % block_elements(dtype) != 0) dtype = DType::kF32;
    const bool permute = rs.permute_rows && spec.source_rope != target;
    const int64_t cols = rs.shape.size() == 2 ? rs.shape[1] : 1;
    const int head_dim = c.head_dim;
    const RopeStyle from = spec.source_rope;
    out.push_back(
        TensorToWrite{t.name, rs.shape, dtype,
                      [source, t, rs, permute, cols, head_dim, from](std::vector<float>& v) {
                        source(t.role, t.layer, v);
                        if (permute) permute_rope_rows(v, rs.heads, head_dim, cols, from);
                      }});
  }
  return out;
}

uint32_t gguf_file_type(DType d) {
  switch (d) {
    case DType::kF32:
      return 0;
    case DType::kF16:
      return 1;
    case DType::kQ4_0:
      return 2;
    case DType::kQ8_0:
      return 7;
    case DType::kQ4_1:
      return 3;
    case DType::kQ5_0:
      return 8;
    case DType::kQ5_1:
      return 9;
    case DType::kQ2_K:
      return 10;
    case DType::kQ3_K:
      return 11;  // MOSTLY_Q3_K_S
    case DType::kIQ4_NL:
      return 25;
    case DType::kIQ4_XS:
      return 30;
    case DType::kQ4_K:
      return 14;  // LLAMA_FTYPE_MOSTLY_Q4_K_S: every matrix Q4_K
    case DType::kQ5_K:
      return 16;  // MOSTLY_Q5_K_S
    case DType::kQ6_K:
      return 18;
    case DType::kBF16:
      return 32;
    case DType::kF8E4M3:  // a KV-cache format only: no weights are exported in it
      return 0;
  }
  return 0;
}

// A float as its shortest decimal, so that config.json says 1e-06 as HF writes it, not the
// float's exact value 9.99999997e-07.
double as_written(float value) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
  return std::strtod(std::string(buf, end).c_str(), nullptr);
}

// llama.cpp stores Llama 3 rope scaling as per-frequency divisors.
std::vector<float> llama3_rope_factors(const ModelConfig& c) {
  const auto& s = *c.rope_scaling;
  std::vector<float> factors;
  for (int i = 0; i < c.head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(c.rope_theta), 2.0 * i / c.head_dim);
    const double wavelen = 2.0 * std::numbers::pi / freq;
    const double old_len = s.original_max_position_embeddings;
    if (wavelen < old_len / s.high_freq_factor) {
      factors.push_back(1.0f);
    } else if (wavelen > old_len / s.low_freq_factor) {
      factors.push_back(s.factor);
    } else {
      const double smooth =
          (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      factors.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / s.factor + smooth)));
    }
  }
  return factors;
}

}  // namespace

void export_gguf(const ExportSpec& spec, const WeightSource& source, const std::string& path,
                 const Progress& progress) {
  const ModelConfig& c = spec.config;
  const std::string a = c.architecture;
  std::vector<GGUFMetadataEntry> m = {
      {"general.architecture", gguf_string(a)},
      {"general.name", gguf_string(spec.name)},
      {"general.file_type",
       gguf_u32(gguf_file_type(spec.dtype) + (spec.sensitive_dtype ? 1 : 0))},  // _S -> _M
      {a + ".context_length", gguf_u32(static_cast<uint32_t>(c.max_seq_len))},
      {a + ".embedding_length", gguf_u32(static_cast<uint32_t>(c.dim))},
      {a + ".block_count", gguf_u32(static_cast<uint32_t>(c.n_layers))},
      {a + ".feed_forward_length", gguf_u32(static_cast<uint32_t>(c.hidden_dim))},
      {a + ".attention.head_count", gguf_u32(static_cast<uint32_t>(c.n_heads))},
      {a + ".attention.head_count_kv", gguf_u32(static_cast<uint32_t>(c.n_kv_heads))},
      {a + ".attention.key_length", gguf_u32(static_cast<uint32_t>(c.head_dim))},
      {a + ".attention.value_length", gguf_u32(static_cast<uint32_t>(c.head_dim))},
      {a + ".attention.layer_norm_rms_epsilon", gguf_f32(c.norm_eps)},
      {a + ".rope.freq_base", gguf_f32(c.rope_theta)},
      {a + ".rope.dimension_count", gguf_u32(static_cast<uint32_t>(c.head_dim))},
      {a + ".vocab_size", gguf_u32(static_cast<uint32_t>(c.vocab_size))},
  };
  if (!c.mrope_section.empty()) {
    std::vector<int32_t> sections(c.mrope_section.begin(), c.mrope_section.end());
    sections.resize(4, 0);  // llama.cpp's four sections, the last unused by Qwen2-VL
    m.push_back({a + ".rope.dimension_sections", gguf_i32_array(sections)});
  }
  if (spec.vocab) {
    const SentencePieceVocab& v = *spec.vocab;
    std::vector<int32_t> types;
    for (size_t i = 0; i < v.pieces.size(); ++i) {
      const bool is_byte = v.pieces[i].size() == 6 && v.pieces[i].rfind("<0x", 0) == 0;
      types.push_back(i == 0 ? 2 : (i < v.special.size() && v.special[i]) ? 3 : is_byte ? 6 : 1);
    }
    m.push_back({"tokenizer.ggml.model", gguf_string("llama")});
    m.push_back({"tokenizer.ggml.tokens", gguf_string_array(v.pieces)});
    m.push_back({"tokenizer.ggml.scores", gguf_f32_array(v.scores)});
    m.push_back({"tokenizer.ggml.token_type", gguf_i32_array(types)});
    m.push_back({"tokenizer.ggml.unknown_token_id", gguf_u32(0)});
    if (v.bos)
      m.push_back({"tokenizer.ggml.bos_token_id", gguf_u32(static_cast<uint32_t>(*v.bos))});
    if (v.eos)
      m.push_back({"tokenizer.ggml.eos_token_id", gguf_u32(static_cast<uint32_t>(*v.eos))});
    m.push_back({"tokenizer.ggml.add_bos_token", gguf_bool(true)});
    m.push_back({"tokenizer.ggml.add_eos_token", gguf_bool(false)});
  }
  m.insert(m.end(), spec.extra_gguf_metadata.begin(), spec.extra_gguf_metadata.end());
  const ModelArch* arch = find_arch(a);
  if (!arch) throw std::invalid_argument("cannot export architecture " + a);
  const RopeStyle target = arch->gguf_rope_style;
  auto tensors = tensors_for(spec, source, /*gguf=*/true, target);
  tensors.insert(tensors.end(), spec.extra_tensors.begin(), spec.extra_tensors.end());
  if (c.rope_scaling) {
    const auto factors = llama3_rope_factors(c);
    tensors.push_back({tensor_name(*arch, WeightRole::kRopeFreqs, TensorFileFormat::kGguf),
                       {static_cast<int64_t>(factors.size())},
                       DType::kF32,
                       [factors](std::vector<float>& v) { v = factors; }});
  }
  write_gguf(path, m, tensors, progress);
}

void export_hf_directory(const ExportSpec& spec, const WeightSource& source, const std::string& dir,
                         const Progress& progress) {
  const ModelConfig& c = spec.config;
  std::filesystem::create_directories(dir);
  nlohmann::ordered_json j;
  const bool vl = c.architecture == "qwen2vl";
  j["architectures"] = {vl                          ? "Qwen2VLForConditionalGeneration"
                        : c.architecture == "qwen2" ? "Qwen2ForCausalLM"
                        : c.architecture == "qwen3" ? "Qwen3ForCausalLM"
                                                    : "LlamaForCausalLM"};
  j["model_type"] = vl ? "qwen2_vl" : c.architecture;
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hidden_dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = as_written(c.norm_eps);
  j["rope_theta"] = as_written(c.rope_theta);
  j["tie_word_embeddings"] = c.tied_embeddings;
  j["torch_dtype"] = spec.dtype == DType::kBF16  ? "bfloat16"
                     : spec.dtype == DType::kF16 ? "float16"
                                                 : "float32";
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_id) j["eos_token_id"] = *c.eos_token_id;
  if (c.rope_scaling) {
    j["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", c.rope_scaling->factor},
        {"low_freq_factor", c.rope_scaling->low_freq_factor},
        {"high_freq_factor", c.rope_scaling->high_freq_factor},
        {"original_max_position_embeddings", c.rope_scaling->original_max_position_embeddings}};
  }
  if (!c.mrope_section.empty()) {
    j["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", c.mrope_section}};
  }
  if (!spec.hf_config_extra.empty()) {
    const auto extra = nlohmann::ordered_json::parse(spec.hf_config_extra);
    for (const auto& [key, value] : extra.items()) j[key] = value;
  }
  std::ofstream(std::filesystem::path(dir) / "config.json") << j.dump(2) << "\n";
  auto tensors = tensors_for(spec, source, /*gguf=*/false, RopeStyle::kNeox);
  tensors.insert(tensors.end(), spec.extra_tensors.begin(), spec.extra_tensors.end());
  write_safetensors((std::filesystem::path(dir) / "model.safetensors").string(), tensors, progress);
}

WeightSource source_of(const ModelWeights& w) {
  return [&w](WeightRole role, int layer, std::vector<float>& out) {
    const ModelConfig& c = w.config;
    const LayerWeights* lw = role == WeightRole::kEmbedding || role == WeightRole::kOutput ||
                                     role == WeightRole::kFinalNorm
                                 ? nullptr
                                 : &w.layers[static_cast<size_t>(layer)];
    auto matrix = [&](const WeightMatrix& m) {
      out.resize(static_cast<size_t>(m.rows) * m.cols);
      for (int r = 0; r < m.rows; ++r) {
        dequantize_row(m.dtype, m.row(r), out.data() + static_cast<size_t>(r) * m.cols, m.cols);
      }
    };
    auto vec = [&](const float* p, int n) { out.assign(p, p + n); };
    switch (role) {
      case WeightRole::kEmbedding:
        return matrix(w.token_embedding);
      case WeightRole::kOutput:
        return matrix(w.output);
      case WeightRole::kFinalNorm:
        return vec(w.final_norm, c.dim);
      case WeightRole::kAttnNorm:
        return vec(lw->attn_norm, c.dim);
      case WeightRole::kFfnNorm:
        return vec(lw->ffn_norm, c.dim);
      case WeightRole::kWq:
        return matrix(lw->wq);
      case WeightRole::kWk:
        return matrix(lw->wk);
      case WeightRole::kWv:
        return matrix(lw->wv);
      case WeightRole::kWo:
        return matrix(lw->wo);
      case WeightRole::kBq:
        return vec(lw->bq, c.q_dim());
      case WeightRole::kBk:
        return vec(lw->bk, c.kv_dim());
      case WeightRole::kBv:
        return vec(lw->bv, c.kv_dim());
      case WeightRole::kQNorm:
        return vec(lw->q_norm, c.head_dim);
      case WeightRole::kKNorm:
        return vec(lw->k_norm, c.head_dim);
      case WeightRole::kGate:
        return matrix(lw->w_gate);
      case WeightRole::kUp:
        return matrix(lw->w_up);
      case WeightRole::kDown:
        return matrix(lw->w_down);
      case WeightRole::kRopeFreqs:
        if (w.rope_freq_factors) return vec(w.rope_freq_factors, c.head_dim / 2);
        return out.assign(static_cast<size_t>(c.head_dim / 2), 1.0f);
    }
  };
}

}  // namespace pagedllm
