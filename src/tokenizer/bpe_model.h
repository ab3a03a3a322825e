// Rank-based BPE over one pre-tokenized word, as Hugging Face's BPE model and llama.cpp's gpt2
// vocabularies run it: start from one symbol per character, then repeatedly merge the adjacent
// pair with the lowest merge rank (leftmost on ties) until no listed merge applies.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pagedllm {

struct BpeVocab {
  std::vector<std::string> tokens;  // by id; ids the vocabulary does not use hold ""
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  bool ignore_merges = false;  // a word that is itself a token is taken whole (Llama 3)
  bool byte_fallback = false;  // unknown characters become <0xXX> tokens (Llama 2 style)
  std::optional<int32_t> unk;
  bool fuse_unk = false;
};

class BpeModel {
 public:
  // Merges whose parts or result are not tokens are dropped (they can never apply).
  explicit BpeModel(BpeVocab vocab);

  // Appends the ids for `word` (already normalized and pre-tokenized) to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  int32_t find(std::string_view token) const;  // -1 when absent
  const std::string& token(int32_t id) const { return vocab_.tokens[static_cast<size_t>(id)]; }
  int size() const { return static_cast<int>(vocab_.tokens.size()); }
  bool byte_fallback() const { return vocab_.byte_fallback; }
  // Whether every character of a word becomes at least one token of its own: none is dropped
  // for want of a token, and no run of unknown ones fuses into one <unk>. `byte_level_words`:
  // words are byte-level encoded, so the 256 byte characters are all there is to cover.
  bool encodes_every_character(bool byte_level_words) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  void merge_symbols(std::vector<int32_t>& ids) const;
  void initial_symbols(std::string_view word, std::vector<int32_t>& ids) const;
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  BpeVocab vocab_;
  std::unordered_map<std::string, int32_t> index_;
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t byte_tokens_[256];

  // Words repeat a lot in real text; their ids are cached (bounded, cleared when full).
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace pagedllm
