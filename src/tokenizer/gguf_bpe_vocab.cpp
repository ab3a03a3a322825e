#include "tokenizer/gguf_bpe_vocab.h"

#include <map>
#include <optional>

namespace pagedllm {

namespace {

// The Llama 3 split (tiktoken's cl100k form); Qwen2 differs only in taking digits one by one.
const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kCjk = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+";

const std::map<std::string, std::vector<std::string>>& regex_table() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {"llama-bpe", {kLlama3}},
      {"llama3", {kLlama3}},
      {"llama-v3", {kLlama3}},
      {"dbrx", {kLlama3}},
      {"smaug-bpe", {kLlama3}},
      {"chatglm-bpe", {kLlama3}},
      {"qwen2", {kQwen2}},
      {"stablelm2", {kQwen2}},
      {"deepseek-llm",
       {"[\r\n]",
        "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
        "\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c"
        "\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5"
        "\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
        "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
        "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc"
        "\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
        "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
        "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
        "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
        "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
        "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
        "\U000118a0-\U000118df\U0001e900-\U0001e943]+",
        "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", R"(\s+$)", kCjk,
        R"(\p{N}+)"}},
      {"deepseek-coder", {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}},
      {"falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {"starcoder", {R"(\p{N})", kGpt2}},
      {"refact", {R"(\p{N})", kGpt2}},
      {"command-r", {R"(\p{N})", kGpt2}},
      {"smollm", {R"(\p{N})", kGpt2}},
      {"codeshell", {R"(\p{N})", kGpt2}},
      {"exaone", {R"(\p{N})", kGpt2}},
      {"gpt-2", {kGpt2}},
      {"mpt", {kGpt2}},
      {"olmo", {kGpt2}},
      {"jais", {kGpt2}},
      {"poro-chat", {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
      {"bloom", {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
      {"gpt3-finnish", {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
      {"viking", {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"}},
  };
  return table;
}

// GGUF token types (llama.cpp's llama_token_type).
constexpr int64_t kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4;

std::vector<std::pair<std::string, std::string>> read_merges(const GGUFFile& g) {
  const GGUFValue* merges = g.find("tokenizer.ggml.merges");
  if (!merges || merges->type != GGUFType::kArray || merges->array_type != GGUFType::kString) {
    throw ModelLoadError(g.path() + ": a gpt2 vocabulary needs tokenizer.ggml.merges (strings)");
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges->strings.size());
  for (const std::string& m : merges->strings) {
    const size_t space = m.find(' ', 1);
    if (space == std::string::npos) throw ModelLoadError(g.path() + ": bad merge '" + m + "'");
    out.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  return out;
}

std::optional<int32_t> token_id(const GGUFFile& g, const char* key, size_t vocab_size) {
  auto v = g.find_int(key);
  if (!v || *v < 0 || static_cast<size_t>(*v) >= vocab_size) return std::nullopt;
  return static_cast<int32_t>(*v);
}

}  // namespace

std::vector<std::string> gguf_pre_tokenizer_regexes(const std::string& pre) {
  auto it = regex_table().find(pre);
  return it == regex_table().end() ? std::vector<std::string>{} : it->second;
}

std::unique_ptr<BpeTokenizer> gpt2_tokenizer_from_gguf(const GGUFFile& g,
                                                       const std::vector<std::string>& tokens) {
  const GGUFValue* pre_value = g.find("tokenizer.ggml.pre");
  const std::string pre = pre_value ? g.get_string("tokenizer.ggml.pre") : "default";
  const std::vector<std::string> regexes = gguf_pre_tokenizer_regexes(pre);
  if (regexes.empty()) {
    throw ModelLoadError(g.path() + ": pre-tokenizer '" + pre + "' is not supported");
  }
  BpeTokenizerParts parts;
  parts.vocab.tokens = tokens;
  parts.vocab.merges = read_merges(g);
  parts.vocab.ignore_merges = pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3";
  if (const GGUFValue* types = g.find("tokenizer.ggml.token_type")) {
    if (types->ints.size() > tokens.size()) {
      throw ModelLoadError(g.path() + ": token_type is longer than the vocabulary");
    }
    for (size_t i = 0; i < types->ints.size(); ++i) {
      const int64_t type = types->ints[i];
      if (type != kTypeControl && type != kTypeUserDefined && type != kTypeUnknown) continue;
      if (tokens[i].empty()) continue;
      AddedToken t;
      t.content = tokens[i];
      t.id = static_cast<int32_t>(i);
      t.special = type != kTypeUserDefined;
      parts.added.push_back(std::move(t));
    }
  }
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  try {
    for (const std::string& r : regexes) {
      steps.push_back(std::make_unique<SplitPreTokenizer>(r, SplitBehavior::kIsolated, false));
    }
  } catch (const std::exception& e) {
    throw ModelLoadError(g.path() + ": pre-tokenizer '" + pre + "': " + e.what());
  }
  steps.push_back(std::make_unique<ByteLevelPreTokenizer>(false, false));
  parts.pre_tokenizer = std::make_unique<SequencePreTokenizer>(std::move(steps));
  parts.decoder = Decoder::byte_level();
  parts.bos = token_id(g, "tokenizer.ggml.bos_token_id", tokens.size());
  parts.eos = token_id(g, "tokenizer.ggml.eos_token_id", tokens.size());
  auto add_bos = g.find_int("tokenizer.ggml.add_bos_token");
  if (add_bos && *add_bos != 0 && parts.bos) parts.prefix.push_back(*parts.bos);
  auto add_eos = g.find_int("tokenizer.ggml.add_eos_token");
  if (add_eos && *add_eos != 0 && parts.eos) parts.suffix.push_back(*parts.eos);
  if (g.find("tokenizer.chat_template"))
    parts.chat_template = g.get_string("tokenizer.chat_template");
  try {
    return std::make_unique<BpeTokenizer>(std::move(parts));
  } catch (const std::exception& e) {
    throw ModelLoadError(g.path() + ": " + e.what());
  }
}

}  // namespace pagedllm
