#include "tokenizer/load_tokenizer.h"

#include <filesystem>

#include "tokenizer/gguf_bpe_vocab.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/sentencepiece_bpe.h"

namespace pagedllm {

namespace {

const std::vector<std::string>& gguf_tokens(const GGUFFile& g) {
  const GGUFValue* tokens = g.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GGUFType::kArray || tokens->array_type != GGUFType::kString) {
    throw ModelLoadError(g.path() + ": tokenizer.ggml.tokens must be an array of strings");
  }
  return tokens->strings;
}

std::unique_ptr<Tokenizer> sentencepiece_from_gguf(const GGUFFile& g) {
  SentencePieceVocab v;
  v.pieces = gguf_tokens(g);
  if (const GGUFValue* scores = g.find("tokenizer.ggml.scores")) {
    for (double s : scores->floats) v.scores.push_back(static_cast<float>(s));
  }
  if (const GGUFValue* types = g.find("tokenizer.ggml.token_type")) {
    // 2 unknown, 3 control: not text.
    for (int64_t t : types->ints) v.special.push_back(t == 2 || t == 3);
  }
  if (auto bos = g.find_int("tokenizer.ggml.bos_token_id")) v.bos = static_cast<int32_t>(*bos);
  if (auto eos = g.find_int("tokenizer.ggml.eos_token_id")) v.eos = static_cast<int32_t>(*eos);
  if (auto prefix = g.find_int("tokenizer.ggml.add_space_prefix"))
    v.add_space_prefix = *prefix != 0;
  if (g.find("tokenizer.chat_template")) v.chat_template = g.get_string("tokenizer.chat_template");
  if (auto add_bos = g.find_int("tokenizer.ggml.add_bos_token"); add_bos && *add_bos == 0) {
    v.bos.reset();
  }
  if (v.scores.size() > v.pieces.size() || v.special.size() > v.pieces.size()) {
    throw ModelLoadError(g.path() + ": tokenizer arrays disagree in length");
  }
  return std::make_unique<SentencePieceBpeTokenizer>(std::move(v));
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GGUFFile& g) {
  const std::string model = g.get_string("tokenizer.ggml.model");
  if (model == "llama") return sentencepiece_from_gguf(g);
  if (model == "gpt2") return gpt2_tokenizer_from_gguf(g, gguf_tokens(g));
  throw ModelLoadError(g.path() + ": tokenizer model '" + model +
                       "' is not supported (supported: llama, gpt2)");
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_path,
                                          const std::string& tokenizer_path, int vocab_size) {
  namespace fs = std::filesystem;
  auto is_hf = [](const std::string& p) {
    return (fs::is_directory(p) && fs::is_regular_file(fs::path(p) / "tokenizer.json")) ||
           fs::path(p).extension() == ".json";
  };
  if (!tokenizer_path.empty()) {
    if (is_hf(tokenizer_path)) return load_hf_tokenizer(tokenizer_path);
    if (GGUFFile::has_magic(tokenizer_path)) return tokenizer_from_gguf(GGUFFile(tokenizer_path));
    return std::make_unique<SentencePieceBpeTokenizer>(
        read_llama2c_tokenizer(tokenizer_path, vocab_size));
  }
  if (GGUFFile::has_magic(model_path)) return tokenizer_from_gguf(GGUFFile(model_path));
  if (is_hf(model_path)) return load_hf_tokenizer(model_path);
  throw ModelLoadError(model_path +
                       ": has no embedded tokenizer; pass --tokenizer (a llama2.c tokenizer.bin)");
}

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) throw ModelLoadError(path + ": no such file or directory");
  if (fs::is_directory(path) || fs::path(path).extension() == ".json") {
    return load_hf_tokenizer(path);
  }
  if (GGUFFile::has_magic(path)) return tokenizer_from_gguf(GGUFFile(path));
  return std::make_unique<SentencePieceBpeTokenizer>(read_llama2c_tokenizer(path, -1));
}

}  // namespace pagedllm
