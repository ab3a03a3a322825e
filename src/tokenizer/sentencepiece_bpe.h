// SentencePiece-style BPE over piece scores, as Llama 2 / Mistral vocabularies and llama2.c's
// tokenizer.bin use it: spaces become a marker ("▁", or " " in llama2.c files), a marker is
// prepended, text is split into UTF-8 characters (unknown ones fall back to <0xXX> byte
// tokens), then the adjacent pair whose merge has the best score is merged until none is left.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/tokenizer.h"

namespace pagedllm {

struct SentencePieceVocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<uint8_t> special;               // control / unknown tokens, skipped when decoding
  std::string space_marker = "\xE2\x96\x81";  // U+2581
  bool add_space_prefix = true;
  std::optional<int32_t> bos, eos;
  std::string chat_template;
};

class SentencePieceBpeTokenizer : public Tokenizer {
 public:
  explicit SentencePieceBpeTokenizer(SentencePieceVocab vocab);

  int vocab_size() const override { return static_cast<int>(vocab_.pieces.size()); }
  using Tokenizer::encode;
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string piece(int32_t id) const override;
  std::string decode_token(int32_t previous, int32_t id, bool skip_special) const override;
  bool is_special(int32_t id) const override;
  std::optional<int32_t> bos_id() const override { return vocab_.bos; }
  std::optional<int32_t> eos_id() const override { return vocab_.eos; }
  std::string chat_template() const override { return vocab_.chat_template; }
  // Spaces only grow into markers and unknown characters split into bytes, so a token covers
  // at most its piece's bytes.
  size_t max_text_bytes_per_token() const override { return std::max<size_t>(max_piece_bytes_, 1); }

 private:
  // A piece of the text being merged: bytes [start, start + length), 0 once merged into its
  // left neighbour; prev/next link the live symbols (-1 at the ends).
  struct Symbol {
    size_t start, length;
    int32_t id;
    int prev, next;
  };
  // Lets the index be searched with a string_view, without building a string per lookup.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  int32_t find(std::string_view piece) const;
  void encode_run(std::string_view text, std::vector<int32_t>& ids) const;
  void merge_best_pairs(std::string_view text, std::vector<Symbol>& symbols) const;

  SentencePieceVocab vocab_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> index_;
  size_t max_piece_bytes_ = 0;
  int32_t byte_tokens_[256];
  AddedTokenMatcher specials_;
};

// llama2.c tokenizer.bin: int32 max_token_length, then per token f32 score, int32 length, bytes.
// vocab_size < 0 reads every token the file holds. Throws ModelLoadError for a malformed file.
SentencePieceVocab read_llama2c_tokenizer(const std::string& path, int vocab_size);

}  // namespace pagedllm
