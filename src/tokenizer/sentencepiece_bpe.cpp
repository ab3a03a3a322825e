#include "tokenizer/sentencepiece_bpe.h"

#include <cstring>
#include <fstream>

#include "format/mapped_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode_regex.h"

namespace pagedllm {

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special,
                              int32_t previous) const {
  std::string out;
  for (int32_t id : ids) {
    out += decode_token(previous, id, skip_special);
    previous = id;
  }
  return out;
}

SentencePieceBpeTokenizer::SentencePieceBpeTokenizer(SentencePieceVocab vocab)
    : vocab_(std::move(vocab)) {
  vocab_.scores.resize(vocab_.pieces.size(), 0.0f);
  vocab_.special.resize(vocab_.pieces.size(), 0);
  std::fill(std::begin(byte_tokens_), std::end(byte_tokens_), -1);
  index_.reserve(vocab_.pieces.size());
  for (size_t i = 0; i < vocab_.pieces.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    index_.emplace(vocab_.pieces[i], id);  // the first of duplicate pieces wins
    const int b = byte_token_value(vocab_.pieces[i]);
    if (b >= 0 && byte_tokens_[b] < 0) byte_tokens_[b] = id;
  }
  // Control tokens written like "<s>" are matched in text when special text is parsed
  // (llama2.c's "\n<s>\n" style pieces are not).
  std::vector<AddedToken> specials;
  for (size_t i = 0; i < vocab_.pieces.size(); ++i) {
    const std::string& p = vocab_.pieces[i];
    if (!vocab_.special[i] || p.size() < 3 || p.front() != '<' || p.back() != '>') continue;
    AddedToken t;
    t.content = p;
    t.id = static_cast<int32_t>(i);
    t.special = true;
    specials.push_back(std::move(t));
  }
  specials_ = AddedTokenMatcher(std::move(specials));
}

int32_t SentencePieceBpeTokenizer::find(const std::string& piece) const {
  auto it = index_.find(piece);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int32_t> SentencePieceBpeTokenizer::encode(std::string_view text, bool add_special,
                                                       bool parse_special) const {
  std::vector<int32_t> ids;
  if (add_special && vocab_.bos) ids.push_back(*vocab_.bos);
  // Each run of text between special tokens gets the prefix space, as the Prepend normalizer
  // of Llama 2's tokenizer.json gives it.
  for (const auto& segment : specials_.split(text, parse_special)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else {
      encode_run(segment.text, ids);
    }
  }
  return ids;
}

void SentencePieceBpeTokenizer::encode_run(std::string_view text, std::vector<int32_t>& ids) const {
  if (text.empty()) return;
  std::string normalized;
  if (vocab_.add_space_prefix) normalized = vocab_.space_marker;
  for (char c : text) {
    if (c == ' ') {
      normalized += vocab_.space_marker;
    } else {
      normalized += c;
    }
  }
  // One symbol per UTF-8 character, or per byte where the character is not in the vocabulary.
  std::vector<std::string> symbols;
  std::vector<int32_t> symbol_ids;
  for (size_t i = 0; i < normalized.size();) {
    const size_t n = std::min(utf8_sequence_length(static_cast<unsigned char>(normalized[i])),
                              normalized.size() - i);
    std::string ch = normalized.substr(i, n);
    const int32_t id = find(ch);
    if (id >= 0) {
      symbols.push_back(ch);
      symbol_ids.push_back(id);
    } else {
      for (char byte : ch) {
        symbols.emplace_back(1, byte);
        symbol_ids.push_back(byte_tokens_[static_cast<unsigned char>(byte)]);
      }
    }
    i += n;
  }
  // Merge the best-scoring adjacent pair (leftmost on ties) until no pair is in the vocabulary.
  while (true) {
    float best_score = 0.0f;
    int32_t best_id = -1;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const int32_t id = find(symbols[i] + symbols[i + 1]);
      if (id < 0) continue;
      const float score = vocab_.scores[static_cast<size_t>(id)];
      if (best_id < 0 || score > best_score) {
        best_score = score;
        best_id = id;
        best_at = i;
      }
    }
    if (best_id < 0) break;
    symbols[best_at] += symbols[best_at + 1];
    symbol_ids[best_at] = best_id;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
    symbol_ids.erase(symbol_ids.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
  }
  for (int32_t id : symbol_ids) {
    ids.push_back(id < 0 ? 0 : id);  // a byte with no byte token becomes <unk> (id 0)
  }
}

std::string SentencePieceBpeTokenizer::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return "";
  return vocab_.pieces[static_cast<size_t>(id)];
}

bool SentencePieceBpeTokenizer::is_special(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  return vocab_.special[static_cast<size_t>(id)] != 0 || id == vocab_.bos || id == vocab_.eos;
}

std::string SentencePieceBpeTokenizer::decode_token(int32_t previous, int32_t id,
                                                    bool skip_special) const {
  if (id < 0 || id >= vocab_size()) return "";
  if (is_special(id)) return skip_special ? "" : vocab_.pieces[static_cast<size_t>(id)];
  const std::string& p = vocab_.pieces[static_cast<size_t>(id)];
  const int b = byte_token_value(p);
  if (b >= 0) return std::string(1, static_cast<char>(b));
  std::string out;
  for (size_t i = 0; i < p.size();) {
    if (p.compare(i, vocab_.space_marker.size(), vocab_.space_marker) == 0) {
      out += ' ';
      i += vocab_.space_marker.size();
    } else {
      out += p[i++];
    }
  }
  // SentencePiece drops the prefix space of the first piece of a text.
  const bool starts_text = previous < 0 || (vocab_.bos && previous == *vocab_.bos);
  if (starts_text && vocab_.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

SentencePieceVocab read_llama2c_tokenizer(const std::string& path, int vocab_size) {
  MappedFile file(path);
  const uint8_t* p = file.data();
  const uint8_t* end = p + file.size();
  auto read_i32 = [&](const char* what) {
    if (end - p < 4) throw ModelLoadError(path + ": truncated llama2.c tokenizer (" + what + ")");
    int32_t v;
    std::memcpy(&v, p, 4);
    p += 4;
    return v;
  };
  const int32_t max_len = read_i32("header");
  if (max_len <= 0 || max_len > 4096) throw ModelLoadError(path + ": not a llama2.c tokenizer");
  SentencePieceVocab v;
  v.space_marker = " ";
  // vocab_size < 0: as many tokens as the file holds.
  for (int i = 0; vocab_size < 0 ? p < end : i < vocab_size; ++i) {
    const int32_t score_bits = read_i32("score");
    float score;
    std::memcpy(&score, &score_bits, 4);
    const int32_t len = read_i32("length");
    if (len < 0 || len > max_len || end - p < len) {
      throw ModelLoadError(path + ": token " + std::to_string(i) + " has a bad length");
    }
    v.pieces.emplace_back(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    v.scores.push_back(score);
    p += len;
  }
  if (p != end) {
    throw ModelLoadError(path + ": holds more than the model's " + std::to_string(vocab_size) +
                         " tokens");
  }
  vocab_size = static_cast<int>(v.pieces.size());
  // llama2.c's convention: 0 <unk>, 1 BOS, 2 EOS.
  v.special.assign(v.pieces.size(), 0);
  for (int i = 0; i < std::min(3, vocab_size); ++i) v.special[static_cast<size_t>(i)] = 1;
  if (vocab_size > 2) {
    v.bos = 1;
    v.eos = 2;
  }
  return v;
}

}  // namespace pagedllm
