#include "tokenizer/sentencepiece_bpe.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <queue>

#include "format/mapped_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode_regex.h"
#include "util/interrupt.h"

namespace pagedllm {

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special,
                              int32_t previous) const {
  std::string out;
  for (int32_t id : ids) {
    interruption_point();
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
    max_piece_bytes_ = std::max(max_piece_bytes_, vocab_.pieces[i].size());
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

int32_t SentencePieceBpeTokenizer::find(std::string_view piece) const {
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
  // One symbol per UTF-8 character, or per byte where the character is not in the vocabulary,
  // in a linked list over the normalized text.
  std::vector<Symbol> symbols;
  for (size_t i = 0; i < normalized.size();) {
    const size_t n = std::min(utf8_sequence_length(static_cast<unsigned char>(normalized[i])),
                              normalized.size() - i);
    const int32_t id = find(std::string_view(normalized).substr(i, n));
    if (id >= 0) {
      symbols.push_back({i, n, id, 0, 0});
    } else {
      for (size_t k = 0; k < n; ++k) {
        symbols.push_back(
            {i + k, 1, byte_tokens_[static_cast<unsigned char>(normalized[i + k])], 0, 0});
      }
    }
    i += n;
  }
  merge_best_pairs(normalized, symbols);
  for (int s = 0; s >= 0 && !symbols.empty(); s = symbols[static_cast<size_t>(s)].next) {
    const int32_t id = symbols[static_cast<size_t>(s)].id;
    ids.push_back(id < 0 ? 0 : id);  // a byte with no byte token becomes <unk> (id 0)
  }
}

// Merges the best-scoring adjacent pair (leftmost on ties) until no pair is in the vocabulary,
// as SentencePiece's BPE does: a max-heap of candidate merges over the linked list, so a text of
// n symbols takes O(n log n) rather than a scan of every pair per merge. A candidate whose
// symbols have changed since it was pushed is stale and skipped.
void SentencePieceBpeTokenizer::merge_best_pairs(std::string_view text,
                                                 std::vector<Symbol>& symbols) const {
  const int count = static_cast<int>(symbols.size());
  for (int i = 0; i < count; ++i) {
    symbols[static_cast<size_t>(i)].prev = i - 1;
    symbols[static_cast<size_t>(i)].next = i + 1 < count ? i + 1 : -1;
  }
  struct Candidate {
    float score;
    size_t start;  // the left symbol's offset in the text: smaller wins ties
    int left, right;
    size_t length;  // the merged piece's bytes, to recognise stale candidates
    int32_t id;
    bool operator<(const Candidate& o) const {
      return score < o.score || (score == o.score && start > o.start);
    }
  };
  std::priority_queue<Candidate> queue;
  auto consider = [&](int left) {
    if (left < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    if (l.next < 0) return;
    const Symbol& r = symbols[static_cast<size_t>(l.next)];
    if (l.length + r.length > max_piece_bytes_) return;
    const int32_t id = find(text.substr(l.start, l.length + r.length));
    if (id < 0) return;
    queue.push(
        {vocab_.scores[static_cast<size_t>(id)], l.start, left, l.next, l.length + r.length, id});
  };
  for (int i = 0; i + 1 < count; ++i) consider(i);
  while (!queue.empty()) {
    interruption_point();
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(c.left)];
    if (l.length == 0 || l.next != c.right) continue;  // merged away, or a new right neighbour
    Symbol& r = symbols[static_cast<size_t>(c.right)];
    if (l.length + r.length != c.length) continue;  // either side grew since
    l.length += r.length;
    l.id = c.id;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = c.left;
    consider(l.prev);
    consider(c.left);
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
