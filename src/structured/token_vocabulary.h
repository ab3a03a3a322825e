// The model's vocabulary as the matcher sees it: the bytes each token stands for, which tokens
// are special (never allowed inside a grammar) and which end the output (allowed exactly where
// the grammar can end), with the byte tries the masks are computed over.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pagedllm {
class Tokenizer;
}

namespace pagedllm::structured {

// One node of a token trie, in depth-first order: the subtree of node i ends at `skip`, so a
// failed byte skips all tokens that start with the path to it.
struct TrieNode {
  uint8_t byte;
  uint16_t depth;         // 1 for the children of the root
  uint32_t skip;          // index of the next node outside this subtree
  uint32_t tokens_begin;  // into TokenVocabulary::trie_tokens
  uint32_t tokens_count;  // tokens whose bytes end here
};

class TokenVocabulary {
 public:
  // Longest "plain string" tokens taken in one step by a JSON string body (see plain_mask).
  static constexpr int kMaxPlainChars = 16;

  // token_bytes[i]: what token i decodes to; special[i] != 0: never allowed inside a grammar;
  // stop_tokens: allowed when the grammar can end (EOS, end of turn).
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<uint8_t> special,
                  std::vector<int32_t> stop_tokens);

  // From a pagedllm tokenizer: the bytes of each token as it decodes in the middle of a text,
  // its special tokens, and its EOS plus `extra_stop_tokens`. vocab_size may exceed the
  // tokenizer's (a model's padded embedding rows: those ids are never allowed).
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(
      const Tokenizer& tokenizer, int vocab_size = 0,
      const std::vector<int32_t>& extra_stop_tokens = {});

  size_t size() const { return bytes_.size(); }
  size_t mask_words() const { return (bytes_.size() + 31) / 32; }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_special(int32_t id) const { return special_[static_cast<size_t>(id)] != 0; }
  bool is_stop(int32_t id) const;
  const std::vector<int32_t>& stop_tokens() const { return stop_; }

  // Every allowed-in-grammar token.
  const std::vector<TrieNode>& full_trie() const { return full_; }
  // Every allowed-in-grammar token that is not a plain string of <= kMaxPlainChars characters.
  const std::vector<TrieNode>& rest_trie() const { return rest_; }
  const std::vector<int32_t>& trie_tokens() const { return trie_tokens_; }
  size_t max_token_bytes() const { return max_bytes_; }
  // Tokens that are 1..chars whole UTF-8 characters, none of them '"', '\\' or a control:
  // exactly what a JSON string body with `chars` characters left accepts without leaving.
  const std::vector<uint32_t>& plain_mask(int chars) const {
    return plain_[static_cast<size_t>(chars)];
  }
  // The plain tokens (as plain_mask) that start with `byte`, fewest characters first, and how
  // many of them have at most `chars` characters: a trie walk that enters a JSON string body
  // by its first byte takes them in one step.
  const std::vector<int32_t>& plain_by_first(uint8_t byte) const { return by_first_[byte]; }
  size_t plain_by_first_count(uint8_t byte, int chars) const {
    return by_first_count_[byte][static_cast<size_t>(std::min(chars, kMaxPlainChars))];
  }
  // The rest_trie node for the one-byte prefix `byte`, or kNoNode.
  static constexpr uint32_t kNoNode = UINT32_MAX;
  uint32_t rest_root_child(uint8_t byte) const { return rest_root_child_[byte]; }

 private:
  std::vector<TrieNode> build_trie(const std::vector<int32_t>& ids);
  void index_plain_by_first();

  std::vector<std::string> bytes_;
  std::vector<uint8_t> special_;
  std::vector<int32_t> stop_;
  std::vector<TrieNode> full_, rest_;
  std::vector<int32_t> trie_tokens_;
  std::vector<std::vector<uint32_t>> plain_;  // [0..kMaxPlainChars]
  std::array<std::vector<int32_t>, 256> by_first_;
  std::array<std::array<size_t, kMaxPlainChars + 1>, 256> by_first_count_{};
  std::array<uint32_t, 256> rest_root_child_{};
  size_t max_bytes_ = 0;
};

// The number of characters of a plain-string token (see plain_mask), or 0 when it is not one.
int plain_string_chars(const std::string& bytes);

}  // namespace pagedllm::structured
