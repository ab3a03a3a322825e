#include "tokenizer/hf_tokenizer_json.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "format/mapped_file.h"
#include "tokenizer/json_fields.h"

namespace pagedllm {

namespace {

using json = nlohmann::json;

BpeVocab read_bpe_model(const json& model) {
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE")
    throw std::invalid_argument("model type '" + type + "' is not supported (BPE)");
  BpeVocab v;
  for (const auto& [token, id_json] : model.at("vocab").items()) {
    const int64_t id = json_integer(id_json, 0, 1 << 24, "vocab id");
    if (static_cast<size_t>(id) >= v.tokens.size()) v.tokens.resize(static_cast<size_t>(id) + 1);
    v.tokens[static_cast<size_t>(id)] = token;
  }
  for (const auto& m : model.at("merges")) {
    if (m.is_array()) {
      v.merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      continue;
    }
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ', 1);  // "a b"; a part may itself start with a space
    if (space == std::string::npos) throw std::invalid_argument("merge without a space: " + s);
    v.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
  }
  v.ignore_merges = model.value("ignore_merges", false);
  v.byte_fallback = model.value("byte_fallback", false);
  v.fuse_unk = model.value("fuse_unk", false);
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    const std::string unk = model["unk_token"];
    for (size_t i = 0; i < v.tokens.size(); ++i) {
      if (v.tokens[i] == unk) v.unk = static_cast<int32_t>(i);
    }
  }
  if (model.contains("continuing_subword_prefix") &&
      !model["continuing_subword_prefix"].is_null() &&
      !model["continuing_subword_prefix"].get<std::string>().empty()) {
    throw std::invalid_argument("continuing_subword_prefix is not supported");
  }
  return v;
}

std::vector<AddedToken> read_added_tokens(const json& list) {
  std::vector<AddedToken> added;
  if (!list.is_array()) return added;
  for (const auto& t : list) {
    AddedToken a;
    a.id = static_cast<int32_t>(json_integer(t.at("id"), 0, 1 << 24, "added token id"));
    a.content = t.at("content").get<std::string>();
    a.special = t.value("special", false);
    a.lstrip = t.value("lstrip", false);
    a.rstrip = t.value("rstrip", false);
    a.single_word = t.value("single_word", false);
    added.push_back(std::move(a));
  }
  return added;
}

// The ids TemplateProcessing's "single" template puts before and after the text.
void read_post_processor(const json& spec, std::vector<int32_t>& prefix,
                         std::vector<int32_t>& suffix) {
  if (spec.is_null()) return;
  const std::string type = spec.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const auto& p : spec.at("processors")) read_post_processor(p, prefix, suffix);
  } else if (type == "TemplateProcessing") {
    bool after_text = false;
    for (const auto& piece : spec.at("single")) {
      if (piece.contains("Sequence")) {
        after_text = true;
        continue;
      }
      const std::string name = piece.at("SpecialToken").at("id").get<std::string>();
      for (const auto& id : spec.at("special_tokens").at(name).at("ids")) {
        (after_text ? suffix : prefix)
            .push_back(static_cast<int32_t>(json_integer(id, 0, 1 << 24, "special token id")));
      }
    }
  } else if (type != "ByteLevel") {
    throw std::invalid_argument("unsupported post_processor type '" + type + "'");
  }
}

// "bos_token": "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_name(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v["content"].get<std::string>();
  return std::nullopt;
}

std::optional<int32_t> id_of(const BpeTokenizerParts& parts,
                             const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  for (const AddedToken& t : parts.added) {
    if (t.content == *name) return t.id;
  }
  for (size_t i = 0; i < parts.vocab.tokens.size(); ++i) {
    if (parts.vocab.tokens[i] == *name) return static_cast<int32_t>(i);
  }
  return std::nullopt;
}

std::string read_chat_template(const json& config) {
  if (!config.contains("chat_template")) return {};
  const json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {  // [{"name": "default", "template": ...}, ...]
    for (const auto& entry : t) {
      if (entry.value("name", std::string()) == "default") return entry.at("template");
    }
  }
  return {};
}

void apply_config(const json& config, BpeTokenizerParts& parts) {
  parts.bos = id_of(parts, token_name(config, "bos_token"));
  parts.eos = id_of(parts, token_name(config, "eos_token"));
  parts.chat_template = read_chat_template(config);
  // Explicit add_bos_token / add_eos_token override the post-processor, as transformers'
  // LlamaTokenizerFast rebuilds its template from them.
  if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) {
    parts.prefix.clear();
    if (config["add_bos_token"].get<bool>() && parts.bos) parts.prefix.push_back(*parts.bos);
  }
  if (config.contains("add_eos_token") && config["add_eos_token"].is_boolean()) {
    parts.suffix.clear();
    if (config["add_eos_token"].get<bool>() && parts.eos) parts.suffix.push_back(*parts.eos);
  }
}

std::string read_file(const std::filesystem::path& path) {
  MappedFile file(path.string());
  return std::string(reinterpret_cast<const char*>(file.data()), file.size());
}

// The chat template a processor ships apart from tokenizer_config.json, which wins over it as
// in transformers and vLLM: chat_template.jinja (newer transformers), else chat_template.json
// ({"chat_template": "..."}, the Qwen2-VL repos' processor file).
std::optional<std::string> template_file(const std::filesystem::path& dir) {
  if (std::filesystem::is_regular_file(dir / "chat_template.jinja"))
    return read_file(dir / "chat_template.jinja");
  const std::filesystem::path path = dir / "chat_template.json";
  if (!std::filesystem::is_regular_file(path)) return std::nullopt;
  const json doc = json::parse(read_file(path), nullptr, false);
  if (!doc.is_object() || !doc.contains("chat_template") || !doc["chat_template"].is_string())
    throw ModelLoadError(path.string() + " has no string chat_template");
  return doc["chat_template"].get<std::string>();
}

}  // namespace

std::unique_ptr<BpeTokenizer> tokenizer_from_json(std::string_view tokenizer_json,
                                                  std::string_view config_json,
                                                  const std::string& source) {
  try {
    const json doc = json::parse(tokenizer_json);
    BpeTokenizerParts parts;
    parts.vocab = read_bpe_model(doc.at("model"));
    parts.added = read_added_tokens(doc.value("added_tokens", json()));
    parts.normalizer = make_normalizer(doc.value("normalizer", json()));
    parts.pre_tokenizer = make_pre_tokenizer(doc.value("pre_tokenizer", json()));
    parts.decoder = Decoder(doc.value("decoder", json()));
    read_post_processor(doc.value("post_processor", json()), parts.prefix, parts.suffix);
    if (!config_json.empty()) apply_config(json::parse(config_json), parts);
    return std::make_unique<BpeTokenizer>(std::move(parts));
  } catch (const ModelLoadError&) {
    throw;
  } catch (const std::exception& e) {
    throw ModelLoadError(source + ": " + e.what());
  }
}

std::unique_ptr<BpeTokenizer> load_hf_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path file = path;
  if (fs::is_directory(file)) file /= "tokenizer.json";
  if (!fs::is_regular_file(file)) throw ModelLoadError(path + ": no tokenizer.json there");
  const fs::path config = file.parent_path() / "tokenizer_config.json";
  std::string config_text = fs::is_regular_file(config) ? read_file(config) : std::string();
  if (const std::optional<std::string> t = template_file(file.parent_path())) {
    json doc = config_text.empty() ? json::object() : json::parse(config_text, nullptr, false);
    if (!doc.is_object()) throw ModelLoadError(config.string() + " is not a JSON object");
    doc["chat_template"] = *t;
    config_text = doc.dump();
  }
  return tokenizer_from_json(read_file(file), config_text, file.string());
}

}  // namespace pagedllm
