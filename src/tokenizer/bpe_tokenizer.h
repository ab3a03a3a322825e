// A tokenizer assembled from Hugging Face's pipeline stages: added tokens are matched first,
// then each text run is normalized, pre-tokenized into words and BPE-encoded, and BOS/EOS are
// added as the post-processor says. Built from tokenizer.json (hf_tokenizer_json.h) or from a
// GGUF "gpt2" vocabulary with llama.cpp's pre-tokenizer regexes (load_tokenizer.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace pagedllm {

struct BpeTokenizerParts {
  BpeVocab vocab;
  std::vector<AddedToken> added;
  std::unique_ptr<Normalizer> normalizer;       // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null: the run is one word
  Decoder decoder;
  std::vector<int32_t> prefix, suffix;  // ids add_special puts around the text
  std::optional<int32_t> bos, eos;
  std::string chat_template;
};

class BpeTokenizer : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeTokenizerParts parts);

  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  using Tokenizer::encode;
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string piece(int32_t id) const override;
  std::string decode_token(int32_t previous, int32_t id, bool skip_special) const override;
  bool is_special(int32_t id) const override;
  std::optional<int32_t> bos_id() const override { return bos_; }
  std::optional<int32_t> eos_id() const override { return eos_; }
  std::string chat_template() const override { return chat_template_; }
  size_t max_text_bytes_per_token() const override { return max_text_bytes_per_token_; }

 private:
  size_t text_bytes_bound() const;
  void encode_run(std::string_view run, bool text_start, std::vector<int32_t>& ids) const;

  std::vector<std::string> pieces_;  // model tokens and added tokens, by id
  BpeModel model_;
  AddedTokenMatcher added_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  Decoder decoder_;
  std::vector<int32_t> prefix_, suffix_;
  std::optional<int32_t> bos_, eos_;
  std::string chat_template_;
  size_t max_text_bytes_per_token_ = 0;
};

}  // namespace pagedllm
