#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <stdexcept>

#include "tokenizer/unicode_regex.h"

namespace pagedllm {

namespace {

constexpr int32_t kMaxTokenId = 1 << 24;

std::vector<std::string> all_pieces(const BpeVocab& vocab, const std::vector<AddedToken>& added) {
  std::vector<std::string> pieces = vocab.tokens;
  for (const AddedToken& t : added) {
    if (t.id < 0 || t.id > kMaxTokenId) throw std::invalid_argument("added token id out of range");
    const auto id = static_cast<size_t>(t.id);
    if (id >= pieces.size()) pieces.resize(id + 1);
    if (pieces[id].empty()) pieces[id] = t.content;
  }
  return pieces;
}

std::vector<AddedToken> checked(std::vector<AddedToken> added) {
  for (const AddedToken& t : added) {
    if (t.content.empty()) {
      throw std::invalid_argument("added token with empty content");
    }
  }
  return added;
}

}  // namespace

BpeTokenizer::BpeTokenizer(BpeTokenizerParts parts)
    : pieces_(all_pieces(parts.vocab, parts.added)),
      model_(std::move(parts.vocab)),
      added_(checked(std::move(parts.added))),
      normalizer_(std::move(parts.normalizer)),
      pre_tokenizer_(std::move(parts.pre_tokenizer)),
      decoder_(std::move(parts.decoder)),
      prefix_(std::move(parts.prefix)),
      suffix_(std::move(parts.suffix)),
      bos_(parts.bos),
      eos_(parts.eos),
      chat_template_(std::move(parts.chat_template)) {
  for (int32_t id : prefix_) {
    if (id < 0 || id >= vocab_size()) throw std::invalid_argument("post-processor id out of range");
  }
  for (int32_t id : suffix_) {
    if (id < 0 || id >= vocab_size()) throw std::invalid_argument("post-processor id out of range");
  }
  max_text_bytes_per_token_ = text_bytes_bound();
}

// Every input byte reaches a token unless a stage may delete text: a normalizer (Strip,
// Replace with ""), a pre-tokenizer that removes what it splits on, an added token that
// swallows the whitespace beside it, or a character with no token (dropped, or fused into one
// <unk> with its unknown neighbours). Without those, no token stands for more input bytes than
// its own string has (byte-level characters and "▁" are at least as long as the bytes they
// replace, an unknown character is at most 4 bytes), so the longest piece bounds them all.
size_t BpeTokenizer::text_bytes_bound() const {
  if (normalizer_) return 0;
  if (pre_tokenizer_ && !pre_tokenizer_->keeps_every_byte()) return 0;
  for (const AddedToken& t : added_.tokens())
    if (t.lstrip || t.rstrip) return 0;
  if (!model_.encodes_every_character(pre_tokenizer_ && pre_tokenizer_->byte_level())) return 0;
  size_t bound = 4;  // one unknown character, as one <unk> or up to 4 byte tokens
  for (const std::string& p : pieces_) bound = std::max(bound, p.size());
  return bound;
}

void BpeTokenizer::encode_run(std::string_view run, bool text_start,
                              std::vector<int32_t>& ids) const {
  std::vector<std::string> words;
  words.push_back(normalizer_ ? normalizer_->normalize(run) : std::string(run));
  if (pre_tokenizer_) pre_tokenizer_->apply(words, text_start);
  for (const std::string& w : words) model_.encode_word(w, ids);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  const std::string valid = sanitize_utf8(text);
  std::vector<int32_t> ids;
  if (add_special) ids = prefix_;
  bool text_start = true;
  for (const auto& segment : added_.split(valid, parse_special)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else {
      encode_run(segment.text, text_start, ids);
    }
    text_start = false;
  }
  if (add_special) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::string BpeTokenizer::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return "";
  return pieces_[static_cast<size_t>(id)];
}

bool BpeTokenizer::is_special(int32_t id) const {
  const AddedToken* t = added_.find(id);
  return t && t->special;
}

std::string BpeTokenizer::decode_token(int32_t previous, int32_t id, bool skip_special) const {
  if (id < 0 || id >= vocab_size()) return "";
  if (const AddedToken* t = added_.find(id)) {
    if (t->special && skip_special) return "";
    return t->content;
  }
  const bool text_start = previous < 0 || (skip_special && is_special(previous));
  return decoder_.decode(pieces_[static_cast<size_t>(id)], text_start);
}

}  // namespace pagedllm
