#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <queue>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode_regex.h"
#include "util/interrupt.h"

namespace pagedllm {

namespace {

constexpr size_t kCacheCapacity = 1 << 16;
constexpr size_t kCacheMaxWordBytes = 64;

}  // namespace

BpeModel::BpeModel(BpeVocab vocab) : vocab_(std::move(vocab)) {
  index_.reserve(vocab_.tokens.size());
  for (size_t i = 0; i < vocab_.tokens.size(); ++i) {
    if (!vocab_.tokens[i].empty()) index_.emplace(vocab_.tokens[i], static_cast<int32_t>(i));
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_tokens_[b] = find(name);
  }
  merges_.reserve(vocab_.merges.size());
  for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const auto& [left, right] = vocab_.merges[rank];
    const int32_t a = find(left), b = find(right), merged = find(left + right);
    if (a < 0 || b < 0 || merged < 0) continue;
    merges_.emplace(pair_key(a, b), Merge{static_cast<int32_t>(rank), merged});
  }
  vocab_.merges.clear();
  vocab_.merges.shrink_to_fit();
}

bool BpeModel::encodes_every_character(bool byte_level_words) const {
  if (vocab_.unk && !vocab_.fuse_unk) return true;
  const bool all_byte_tokens = std::all_of(std::begin(byte_tokens_), std::end(byte_tokens_),
                                           [](int32_t id) { return id >= 0; });
  if (vocab_.byte_fallback && all_byte_tokens) return true;
  if (!byte_level_words) return false;
  // Text is made valid UTF-8 before it gets here, where 0xC0, 0xC1 and 0xF5-0xFF never occur.
  for (int b = 0; b < 256; ++b) {
    if (b == 0xC0 || b == 0xC1 || b >= 0xF5) continue;
    if (find(byte_level_encode(std::string(1, static_cast<char>(b)))) < 0) return false;
  }
  return true;
}

int32_t BpeModel::find(std::string_view token) const {
  auto it = index_.find(std::string(token));
  return it == index_.end() ? -1 : it->second;
}

void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  bool previous_unk = false;
  for (size_t i = 0; i < word.size();) {
    const size_t n =
        std::min(utf8_sequence_length(static_cast<unsigned char>(word[i])), word.size() - i);
    const int32_t id = find(word.substr(i, n));
    if (id >= 0) {
      ids.push_back(id);
      previous_unk = false;
    } else if (vocab_.byte_fallback && byte_tokens_[static_cast<unsigned char>(word[i])] >= 0) {
      for (size_t k = 0; k < n; ++k)
        ids.push_back(byte_tokens_[static_cast<unsigned char>(word[i + k])]);
      previous_unk = false;
    } else if (vocab_.unk) {
      if (!(vocab_.fuse_unk && previous_unk)) ids.push_back(*vocab_.unk);
      previous_unk = true;
    }
    i += n;
  }
}

void BpeModel::merge_symbols(std::vector<int32_t>& ids) const {
  if (ids.size() < 2) return;
  // Symbols form a linked list; candidate merges wait in a min-heap of (rank, left position)
  // and are checked against the current list when popped (stale ones are skipped).
  const int n = static_cast<int>(ids.size());
  std::vector<int> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int left;
    int32_t left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int left) {
    if (left < 0) return;
    const int right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    const int32_t a = ids[static_cast<size_t>(left)], b = ids[static_cast<size_t>(right)];
    auto it = merges_.find(pair_key(a, b));
    if (it != merges_.end()) heap.push({it->second.rank, left, a, b});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    interruption_point();
    const Candidate c = heap.top();
    heap.pop();
    const auto left = static_cast<size_t>(c.left);
    const int right = next[left];
    if (ids[left] != c.left_id || right < 0 || ids[static_cast<size_t>(right)] != c.right_id) {
      continue;
    }
    ids[left] = merges_.at(pair_key(c.left_id, c.right_id)).result;
    ids[static_cast<size_t>(right)] = -1;
    next[left] = next[static_cast<size_t>(right)];
    if (next[left] >= 0) prev[static_cast<size_t>(next[left])] = c.left;
    consider(prev[left]);
    consider(c.left);
  }
  size_t kept = 0;
  for (int32_t id : ids) {
    if (id >= 0) ids[kept++] = id;
  }
  ids.resize(kept);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  interruption_point();
  if (word.empty()) return;
  if (vocab_.ignore_merges) {
    if (const int32_t id = find(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  initial_symbols(word, ids);
  merge_symbols(ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::move(key), std::move(ids));
  }
}

}  // namespace pagedllm
