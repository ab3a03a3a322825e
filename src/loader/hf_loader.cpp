#include "loader/hf_loader.h"

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "format/dequant.h"
#include "format/safetensors_file.h"
#include "loader/model_arch.h"
#include "loader/weight_binding.h"

namespace pagedllm {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw ModelLoadError(path.string() + ": cannot open");
  json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw ModelLoadError(path.string() + ": not a JSON object");
  return doc;
}

template <typename T>
T get_or(const json& j, const char* key, T fallback, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    throw ModelLoadError(where + ": config.json field '" + key + "' has the wrong type");
  }
}

// A vision-language config.json keeps the language model's fields at the top level (Qwen2-VL
// files on the Hub) or under text_config (newer transformers): the top level overlaid with
// text_config.
json text_model_fields(const json& c) {
  json merged = c;
  if (c.contains("text_config") && c["text_config"].is_object()) {
    for (const auto& [key, value] : c["text_config"].items()) merged[key] = value;
  }
  return merged;
}

void parse_rope_scaling(const json& rs, const std::string& where, ModelConfig& m) {
  const std::string type =
      get_or<std::string>(rs, "rope_type", get_or<std::string>(rs, "type", "", where), where);
  if (rs.contains("mrope_section")) {
    if (!rs["mrope_section"].is_array())
      throw ModelLoadError(where + ": config.json field 'mrope_section' must be a list");
    m.mrope_section = get_or<std::vector<int>>(rs, "mrope_section", {}, where);
  }
  if (type == "llama3") {
    Llama3RopeScaling s;
    s.factor = get_or<float>(rs, "factor", s.factor, where);
    s.low_freq_factor = get_or<float>(rs, "low_freq_factor", s.low_freq_factor, where);
    s.high_freq_factor = get_or<float>(rs, "high_freq_factor", s.high_freq_factor, where);
    s.original_max_position_embeddings = get_or<int>(rs, "original_max_position_embeddings",
                                                     s.original_max_position_embeddings, where);
    m.rope_scaling = s;
  } else if (!type.empty() && type != "default" && type != "mrope") {
    throw ModelLoadError(where + ": rope_scaling type '" + type +
                         "' is not supported (llama3, mrope)");
  }
  if (type == "mrope" && m.mrope_section.empty())
    throw ModelLoadError(where + ": rope_scaling type 'mrope' has no mrope_section");
}

ModelConfig parse_config(const json& file, const std::string& where, std::string& arch_name) {
  if (!file.contains("architectures") || !file["architectures"].is_array() ||
      file["architectures"].empty() || !file["architectures"][0].is_string()) {
    throw ModelLoadError(where + ": config.json has no architectures");
  }
  arch_name = file["architectures"][0].get<std::string>();
  ModelConfig m;
  const ModelArch* arch = find_arch_by_hf_class(arch_name);
  if (!arch) {
    throw ModelLoadError(where + ": architecture " + arch_name +
                         " is not supported (Llama, Mistral, Qwen2, Qwen3, Qwen2-VL, Qwen2.5-VL)");
  }
  const json c = text_model_fields(file);
  m.architecture = std::string(arch->name);
  m.dim = get_or<int>(c, "hidden_size", 0, where);
  m.hidden_dim = get_or<int>(c, "intermediate_size", 0, where);
  m.n_layers = get_or<int>(c, "num_hidden_layers", 0, where);
  m.n_heads = get_or<int>(c, "num_attention_heads", 0, where);
  m.n_kv_heads = get_or<int>(c, "num_key_value_heads", m.n_heads, where);
  m.head_dim = get_or<int>(c, "head_dim", m.n_heads > 0 ? m.dim / m.n_heads : 0, where);
  m.vocab_size = get_or<int>(c, "vocab_size", 0, where);
  m.max_seq_len = get_or<int>(c, "max_position_embeddings", 2048, where);
  m.norm_eps = get_or<float>(c, "rms_norm_eps", 1e-6f, where);
  m.rope_theta = get_or<float>(c, "rope_theta", 10000.0f, where);
  m.tied_embeddings = get_or<bool>(c, "tie_word_embeddings", false, where);
  // rope_parameters: transformers 5's name for rope_scaling, with rope_theta inside.
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!c.contains(key) || !c[key].is_object()) continue;
    parse_rope_scaling(c[key], where, m);
    m.rope_theta = get_or<float>(c[key], "rope_theta", m.rope_theta, where);
    break;
  }
  if (m.architecture == "qwen2vl" && m.mrope_section.empty())
    throw ModelLoadError(where + ": a " + arch_name +
                         " config.json needs rope_scaling.mrope_section");
  if (c.contains("bos_token_id") && c["bos_token_id"].is_number_integer()) {
    m.bos_token_id = c["bos_token_id"].get<int32_t>();
  }
  const json eos = c.value("eos_token_id", json());
  if (eos.is_number_integer()) m.eos_token_id = eos.get<int32_t>();
  if (eos.is_array() && !eos.empty() && eos[0].is_number_integer())
    m.eos_token_id = eos[0].get<int32_t>();
  return m;
}

class HfTensors {
 public:
  HfTensors(const fs::path& dir, const ModelArch& arch, ModelWeights& w) : arch_(arch), w_(w) {
    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(index)) {
      const json idx = read_json(index);
      if (!idx.contains("weight_map") || !idx["weight_map"].is_object()) {
        throw ModelLoadError(index.string() + ": no weight_map");
      }
      std::set<std::string> shards;
      for (const auto& [name, shard] : idx["weight_map"].items()) {
        if (!shard.is_string()) throw ModelLoadError(index.string() + ": bad weight_map entry");
        const std::string file = shard.get<std::string>();
        if (file.find('/') != std::string::npos || file.find("..") != std::string::npos) {
          throw ModelLoadError(index.string() + ": shard name '" + file + "' leaves the directory");
        }
        shards.insert(file);
      }
      for (const auto& s : shards) add_file(dir / s);
    } else if (fs::exists(single)) {
      add_file(single);
    } else {
      throw ModelLoadError(dir.string() + ": no model.safetensors or model.safetensors.index.json");
    }
  }

  bool has(const std::string& name) const { return by_name_.count(name) != 0; }

  const SafetensorsTensor& get(const std::string& name, std::vector<int64_t> shape) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) throw ModelLoadError(w_.source + ": missing tensor '" + name + "'");
    const SafetensorsTensor& t = *it->second;
    if (t.shape != shape) {
      std::string want, got;
      for (auto d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      for (auto d : t.shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      throw ModelLoadError(w_.source + ": tensor '" + name + "' has shape [" + got +
                           "], expected [" + want + "]");
    }
    if (!dtype_of_safetensors(t.dtype)) {
      throw ModelLoadError(w_.source + ": tensor '" + name + "' has dtype " + t.dtype +
                           ", which is not supported (F32, F16, BF16)");
    }
    return t;
  }

  WeightMatrix matrix(const std::string& name, int rows, int cols) {
    const SafetensorsTensor& t = get(name, {rows, cols});
    const DType d = *dtype_of_safetensors(t.dtype);
    const size_t align = d == DType::kF32 ? 4 : 2;
    if (reinterpret_cast<uintptr_t>(t.data) % align != 0) {
      return WeightMatrix{DType::kF32, rows, cols, to_f32(t, int64_t{rows} * cols)};
    }
    return WeightMatrix{d, rows, cols, t.data};
  }

  const float* vector(const std::string& name, int n) {
    const SafetensorsTensor& t = get(name, {n});
    if (t.dtype == "F32" && reinterpret_cast<uintptr_t>(t.data) % 4 == 0) {
      return reinterpret_cast<const float*>(t.data);
    }
    return to_f32(t, n);
  }

 private:
  void add_file(const fs::path& path) {
    files_.push_back(std::make_unique<SafetensorsFile>(path.string()));
    w_.files.push_back(files_.back()->file());
    for (const auto& [name, t] : files_.back()->tensors())
      by_name_[canonical_hf_name(arch_, name)] = &t;
  }
  const float* to_f32(const SafetensorsTensor& t, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(*dtype_of_safetensors(t.dtype), t.data, out.data(), n);
    return w_.own(std::move(out));
  }

  const ModelArch& arch_;
  ModelWeights& w_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsTensor*> by_name_;
};

}  // namespace

bool is_hf_directory(const std::string& path) {
  return fs::is_directory(path) && fs::exists(fs::path(path) / "config.json");
}

ModelWeights load_hf_directory(const std::string& dir_path) {
  const fs::path dir(dir_path);
  ModelWeights w;
  w.source = dir_path;
  std::string arch_name;
  w.config = parse_config(read_json(dir / "config.json"), dir_path, arch_name);
  const ModelArch& arch = *find_arch(w.config.architecture);
  HfTensors t(dir, arch, w);
  bind_llama_weights(t, arch, TensorFileFormat::kHuggingFace, dir_path, w);
  w.rope_style = RopeStyle::kNeox;
  return w;
}

}  // namespace pagedllm
