#include "structured/token_vocabulary.h"

#include <algorithm>
#include <numeric>

#include "structured/grammar.h"
#include "tokenizer/tokenizer.h"

namespace pagedllm::structured {

int plain_string_chars(const std::string& bytes) {
  int chars = 0;
  for (size_t i = 0; i < bytes.size();) {
    const int32_t cp = next_utf8(bytes, i);
    if (cp < 0x20 || cp == '"' || cp == '\\') return 0;
    ++chars;
  }
  return chars;
}

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<uint8_t> special,
                                 std::vector<int32_t> stop_tokens)
    : bytes_(std::move(token_bytes)), special_(std::move(special)), stop_(std::move(stop_tokens)) {
  special_.resize(bytes_.size(), 0);
  std::erase_if(stop_, [&](int32_t id) { return id < 0 || static_cast<size_t>(id) >= size(); });
  for (int32_t id : stop_) special_[static_cast<size_t>(id)] = 1;
  plain_.assign(kMaxPlainChars + 1, std::vector<uint32_t>(mask_words(), 0));
  std::vector<int32_t> all, rest;
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (special_[i] || bytes_[i].empty()) continue;
    const auto id = static_cast<int32_t>(i);
    all.push_back(id);
    max_bytes_ = std::max(max_bytes_, bytes_[i].size());
    const int chars = plain_string_chars(bytes_[i]);
    if (chars == 0 || chars > kMaxPlainChars) {
      rest.push_back(id);
      continue;
    }
    for (int k = chars; k <= kMaxPlainChars; ++k) plain_[k][i / 32] |= 1u << (i % 32);
  }
  full_ = build_trie(all);
  rest_ = build_trie(rest);
  index_plain_by_first();
}

void TokenVocabulary::index_plain_by_first() {
  std::array<std::vector<std::pair<int, int32_t>>, 256> by_first;  // (chars, id)
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (special_[i] || bytes_[i].empty()) continue;
    const int chars = plain_string_chars(bytes_[i]);
    if (chars == 0 || chars > kMaxPlainChars) continue;
    by_first[static_cast<uint8_t>(bytes_[i][0])].push_back({chars, static_cast<int32_t>(i)});
  }
  for (size_t b = 0; b < 256; ++b) {
    std::sort(by_first[b].begin(), by_first[b].end());
    size_t k = 0;
    for (int chars = 0; chars <= kMaxPlainChars; ++chars) {
      while (k < by_first[b].size() && by_first[b][k].first <= chars) {
        by_first_[b].push_back(by_first[b][k++].second);
      }
      by_first_count_[b][static_cast<size_t>(chars)] = k;
    }
  }
  rest_root_child_.fill(kNoNode);
  for (uint32_t n = 0; n < rest_.size(); n = rest_[n].skip) rest_root_child_[rest_[n].byte] = n;
}

bool TokenVocabulary::is_stop(int32_t id) const {
  return std::find(stop_.begin(), stop_.end(), id) != stop_.end();
}

std::vector<TrieNode> TokenVocabulary::build_trie(const std::vector<int32_t>& ids) {
  std::vector<int32_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    return bytes(a) < bytes(b) || (bytes(a) == bytes(b) && a < b);
  });
  std::vector<TrieNode> trie;
  std::vector<uint32_t> path;  // node index at each depth - 1
  const auto close_to = [&](size_t depth) {
    while (path.size() > depth) {
      trie[path.back()].skip = static_cast<uint32_t>(trie.size());
      path.pop_back();
    }
  };
  std::string previous;
  for (int32_t id : sorted) {
    const std::string& b = bytes(id);
    size_t common = 0;
    while (common < b.size() && common < previous.size() && common < path.size() &&
           b[common] == previous[common]) {
      ++common;
    }
    close_to(common);
    for (size_t d = common; d < b.size(); ++d) {
      path.push_back(static_cast<uint32_t>(trie.size()));
      trie.push_back({static_cast<uint8_t>(b[d]), static_cast<uint16_t>(d + 1), 0, 0, 0});
    }
    TrieNode& end = trie[path.back()];
    if (end.tokens_count == 0) end.tokens_begin = static_cast<uint32_t>(trie_tokens_.size());
    trie_tokens_.push_back(id);
    ++end.tokens_count;
    previous = b;
  }
  close_to(0);
  return trie;
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(
    const Tokenizer& tokenizer, int vocab_size, const std::vector<int32_t>& extra_stop_tokens) {
  const int n = std::max(vocab_size, tokenizer.vocab_size());
  // A token's bytes in the middle of a text: after an ordinary token, so that SentencePiece's
  // "drop the space at the start of the text" does not apply.
  int32_t previous = 0;
  while (previous < tokenizer.vocab_size() &&
         (tokenizer.is_special(previous) || tokenizer.bos_id() == previous)) {
    ++previous;
  }
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<uint8_t> special(static_cast<size_t>(n), 1);
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    special[static_cast<size_t>(id)] = tokenizer.is_special(id) ? 1 : 0;
    if (!special[static_cast<size_t>(id)]) {
      bytes[static_cast<size_t>(id)] = tokenizer.decode_token(previous, id, false);
    }
  }
  std::vector<int32_t> stop = extra_stop_tokens;
  if (auto eos = tokenizer.eos_id()) stop.push_back(*eos);
  return std::make_shared<TokenVocabulary>(std::move(bytes), std::move(special), std::move(stop));
}

}  // namespace pagedllm::structured
