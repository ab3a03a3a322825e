// The tokenizer interface the engine and CLI use, whatever vocabulary backs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual int vocab_size() const = 0;
  // add_special adds BOS/EOS as the vocabulary says (add_special_tokens in HF terms).
  // parse_special: special-token text in `text` becomes the special token (HF's default);
  // off, it is tokenized as plain text (llama.cpp's parse_special=false).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  std::vector<int32_t> encode(std::string_view text, bool add_special) const {
    return encode(text, add_special, /*parse_special=*/true);
  }
  // The vocabulary's own string for a token (e.g. "▁the", "Ġthe", "<0x0A>").
  virtual std::string piece(int32_t id) const = 0;
  // The bytes token `id` stands for when it follows `previous` (-1: start of text). Special
  // tokens give "" when skip_special.
  virtual std::string decode_token(int32_t previous, int32_t id, bool skip_special) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // The Jinja chat template the model ships, or "" when it has none.
  // An upper bound on the bytes of input text that one token stands for, so that a text of n
  // bytes needs at least ceil(n / bound) tokens (what lets a server refuse a prompt that cannot
  // fit before tokenizing it); 0 when the tokenizer has none to give (a normalizer or
  // pre-tokenizer that may delete text, stripping added tokens, fused unknown tokens).
  virtual size_t max_text_bytes_per_token() const { return 0; }
  virtual std::string chat_template() const { return {}; }

  std::string decode(const std::vector<int32_t>& ids, bool skip_special = true,
                     int32_t previous = -1) const;
  // The token's text for templates ("<|begin_of_text|>"), or "" without such a token.
  std::string token_text(std::optional<int32_t> id) const { return id ? piece(*id) : ""; }
};

}  // namespace pagedllm
