#include "structured/matcher.h"

#include <algorithm>
#include <cstring>

namespace pagedllm::structured {

namespace {

bool same_stack(const std::vector<uint32_t>& data, size_t a, size_t b) {
  return data[a] == data[b] &&
         std::memcmp(&data[a + 1], &data[b + 1], data[a] * sizeof(uint32_t)) == 0;
}

uint64_t stack_hash(const std::vector<uint32_t>& data, size_t start) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = start; i <= start + data[start]; ++i) h = (h ^ data[i]) * 0x100000001B3ull;
  return h ^ (h >> 29);
}

void set_bit(uint32_t* words, int32_t id) {
  words[static_cast<uint32_t>(id) / 32] |= 1u << (static_cast<uint32_t>(id) % 32);
}

// When every stack stands in a JSON string body: the most characters any may still take
// (kUnboundedChars: no limit); else 0.
// (A stack standing at the start of the shared character rule of a long string body counts
// with the characters its return frame holds.)
int json_body_chars(const CompiledGrammar& g, const StackSet& set) {
  int chars = 0;
  for (size_t p = 0; p < set.data.size(); p += set.data[p] + 1) {
    const uint32_t len = set.data[p];
    const State& top = g.states[set.data[p + len]];
    uint16_t left = top.json_chars_left;
    if (left == 0 && top.json_char_rule_start && len >= 2) {
      left = g.states[set.data[p + len - 1]].json_call_chars;
    }
    if (left == 0) return 0;
    chars = std::max<int>(chars, left);
  }
  return chars;
}

}  // namespace

void StackIndex::clear() {
  if (count_ >= kScanUpTo) std::fill(slots_.begin(), slots_.end(), 0u);  // else unused
  count_ = 0;
}

void StackIndex::insert(const std::vector<uint32_t>& data, uint32_t start) {
  const size_t mask = slots_.size() - 1;
  for (size_t i = stack_hash(data, start) & mask;; i = (i + 1) & mask) {
    if (slots_[i] == 0) {
      slots_[i] = start + 1;
      return;
    }
  }
}

void StackIndex::grow(const std::vector<uint32_t>& data) {
  // Entering hash mode: the slots are all empty (clear() emptied them); past it: double.
  slots_.assign(count_ == kScanUpTo ? std::max<size_t>(64, slots_.size()) : slots_.size() * 2, 0u);
  for (size_t p = 0, n = 0; n < count_; p += data[p] + 1, ++n) {
    insert(data, static_cast<uint32_t>(p));
  }
}

bool StackIndex::repeats(const std::vector<uint32_t>& data, size_t start) {
  if (count_ < kScanUpTo) {
    for (size_t p = 0; p < start; p += data[p] + 1) {
      if (same_stack(data, p, start)) return true;
    }
    if (++count_ == kScanUpTo) grow(data);
    return false;
  }
  if ((count_ + 1) * 2 > slots_.size()) grow(data);
  const size_t mask = slots_.size() - 1;
  for (size_t i = stack_hash(data, start) & mask; slots_[i] != 0; i = (i + 1) & mask) {
    if (same_stack(data, slots_[i] - 1, start)) return true;
  }
  insert(data, static_cast<uint32_t>(start));
  ++count_;
  return false;
}

StackSet Stepper::initial() {
  StackSet out;
  work_.assign(1, g_.rule_start[g_.start_rule]);
  visited_.clear();
  visited_index_.clear();
  out_index_.clear();
  closure(work_, out);
  return out;
}

void Stepper::add_unique(const std::vector<uint32_t>& stack, std::vector<uint32_t>& out,
                         StackIndex& index) {
  const size_t start = out.size();
  out.push_back(static_cast<uint32_t>(stack.size()));
  out.insert(out.end(), stack.begin(), stack.end());
  if (index.repeats(out, start)) out.resize(start);
}

// Expands a stack until its top state reads bytes: calls push the callee's start, a rule that
// may end returns to its caller (or ends the input, at the bottom).
void Stepper::closure(std::vector<uint32_t>& stack, StackSet& out) {
  const uint32_t s = stack.back();
  const State& st = g_.states[s];
  if (st.simple) {
    add_unique(stack, out.data, out_index_);
    return;
  }
  const size_t mark = visited_.size();
  add_unique(stack, visited_, visited_index_);
  if (visited_.size() == mark) return;  // expanded already
  if (st.edges_begin != st.edges_end) add_unique(stack, out.data, out_index_);
  if (stack.size() < kMaxDepth) {
    for (uint32_t c = st.calls_begin; c < st.calls_end; ++c) {
      const CallEdge& call = g_.calls[c];
      if (g_.states[call.return_state].tail) {
        stack.back() = g_.rule_start[call.rule];
        closure(stack, out);
      } else {
        stack.back() = call.return_state;
        stack.push_back(g_.rule_start[call.rule]);
        closure(stack, out);
        stack.pop_back();
      }
      stack.back() = s;
    }
  }
  if (st.final) {
    if (stack.size() == 1) {
      out.can_end = true;
    } else {
      stack.pop_back();
      closure(stack, out);
      stack.push_back(s);
    }
  }
}

bool Stepper::step(const uint32_t* in, size_t in_len, uint8_t byte, StackSet& out) {
  out.data.clear();
  out.can_end = false;
  out_index_.clear();
  for (size_t p = 0; p < in_len; p += in[p] + 1) {
    const uint32_t len = in[p];
    const uint32_t* frames = in + p + 1;
    const State& st = g_.states[frames[len - 1]];
    for (uint32_t e = st.edges_begin; e < st.edges_end; ++e) {
      const ByteEdge& edge = g_.edges[e];
      if (edge.lo > byte) break;
      if (byte > edge.hi) continue;
      if (g_.states[edge.target].simple) {
        const size_t start = out.data.size();
        out.data.push_back(len);
        out.data.insert(out.data.end(), frames, frames + len);
        out.data.back() = edge.target;
        if (out_index_.repeats(out.data, start)) out.data.resize(start);
      } else {
        work_.assign(frames, frames + len);
        work_.back() = edge.target;
        visited_.clear();
        visited_index_.clear();
        closure(work_, out);
      }
    }
  }
  return !out.empty();
}

bool Stepper::step_bytes(const StackSet& in, std::string_view bytes, StackSet& out) {
  StackSet a = in, b;
  for (char c : bytes) {
    if (!step(a.data.data(), a.data.size(), static_cast<uint8_t>(c), b)) return false;
    std::swap(a, b);
  }
  out = std::move(a);
  return true;
}

uint32_t StepMemo::intern(const StackSet& set) {
  auto [it, added] = index_.try_emplace(TokenGrammar::key_of(set), static_cast<uint32_t>(size()));
  if (added) {
    sets_.push_back(set);
    table_.resize(sets_.size() * 256, kUnknown);
  }
  return it->second;
}

uint32_t StepMemo::advance(Stepper& stepper, uint32_t from, uint8_t byte, StackSet& scratch) {
  uint32_t to = next(from, byte);
  if (to != kUnknown) return to;
  const StackSet& in = sets_[from];
  to = stepper.step(in.data.data(), in.data.size(), byte, scratch) ? intern(scratch) : kDead;
  set_next(from, byte, to);
  return to;
}

void StepMemo::clear() {
  sets_.clear();
  index_.clear();
  table_.clear();
}

TokenGrammar::TokenGrammar(std::shared_ptr<const CompiledGrammar> grammar,
                           std::shared_ptr<const TokenVocabulary> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)) {}

std::string TokenGrammar::key_of(const StackSet& state) {
  std::string key(reinterpret_cast<const char*>(state.data.data()),
                  state.data.size() * sizeof(uint32_t));
  key += state.can_end ? '1' : '0';
  return key;
}

bool TokenGrammar::cached_mask(const StackSet& state, uint32_t* words) const {
  const std::string key = key_of(state);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = masks_.find(key);
  if (it == masks_.end()) return false;
  std::memcpy(words, it->second.data(), it->second.size() * sizeof(uint32_t));
  return true;
}

void TokenGrammar::cache_mask(const StackSet& state, const uint32_t* words) const {
  const size_t n = vocab_->mask_words();
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_bytes_ + n * sizeof(uint32_t) > kMaxCachedBytes) return;
  if (masks_.emplace(key_of(state), std::vector<uint32_t>(words, words + n)).second) {
    cached_bytes_ += n * sizeof(uint32_t);
  }
}

std::unique_ptr<StepMemo> TokenGrammar::borrow_memo() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (memos_.empty()) return std::make_unique<StepMemo>();
  std::unique_ptr<StepMemo> memo = std::move(memos_.back());
  memos_.pop_back();
  return memo;
}

void TokenGrammar::give_back(std::unique_ptr<StepMemo> memo) const {
  if (memo->size() > StepMemo::kMaxSets) memo->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  memos_.push_back(std::move(memo));
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const TokenGrammar> grammar)
    : grammar_(std::move(grammar)), stepper_(grammar_->grammar()) {
  reset();
}

void GrammarMatcher::reset() {
  history_.assign(1, stepper_.initial());
  terminated_.assign(1, 0);
}

bool GrammarMatcher::accept_token(int32_t token) {
  const TokenVocabulary& vocab = grammar_->vocab();
  if (token < 0 || static_cast<size_t>(token) >= vocab.size()) return false;
  if (vocab.is_stop(token)) {
    // After the end, more stop tokens are what the mask allows (a request whose min_tokens
    // ignores the first EOS draws them until it may stop).
    if (!can_end() && !is_terminated()) return false;
    history_.push_back(history_.back());
    terminated_.push_back(1);
    return true;
  }
  if (is_terminated() || vocab.is_special(token) || vocab.bytes(token).empty()) return false;
  StackSet next;
  if (!stepper_.step_bytes(history_.back(), vocab.bytes(token), next)) return false;
  history_.push_back(std::move(next));
  terminated_.push_back(0);
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (is_terminated()) return false;
  StackSet next;
  if (!stepper_.step_bytes(history_.back(), bytes, next)) return false;
  history_.push_back(std::move(next));
  terminated_.push_back(0);
  return true;
}

void GrammarMatcher::rollback(size_t n) {
  n = std::min(n, num_accepted());
  history_.resize(history_.size() - n);
  terminated_.resize(terminated_.size() - n);
}

void GrammarMatcher::fill_next_token_bitmask(uint32_t* words) {
  const TokenVocabulary& vocab = grammar_->vocab();
  if (is_terminated()) {
    std::fill(words, words + vocab.mask_words(), 0u);
    for (int32_t id : vocab.stop_tokens()) set_bit(words, id);
    return;
  }
  const StackSet& state = history_.back();
  if (grammar_->cached_mask(state, words)) return;
  compute_mask(state, words);
  grammar_->cache_mask(state, words);
}

void GrammarMatcher::compute_mask(const StackSet& state, uint32_t* words) {
  const TokenVocabulary& vocab = grammar_->vocab();
  const CompiledGrammar& g = grammar_->grammar();
  std::fill(words, words + vocab.mask_words(), 0u);
  if (state.can_end) {
    for (int32_t id : vocab.stop_tokens()) set_bit(words, id);
  }
  if (state.data.empty()) return;
  // Inside JSON string bodies only: the plain tokens in one step, the rest through the trie.
  const int chars_left = json_body_chars(g, state);
  std::unique_ptr<StepMemo> memo = grammar_->borrow_memo();
  if (chars_left == 0) {
    walk_trie(vocab.full_trie(), false, state, *memo, words);
  } else {
    const std::vector<uint32_t>& plain =
        vocab.plain_mask(std::min(chars_left, TokenVocabulary::kMaxPlainChars));
    for (size_t w = 0; w < plain.size(); ++w) words[w] |= plain[w];
    walk_trie(vocab.rest_trie(), true, state, *memo, words);
  }
  grammar_->give_back(std::move(memo));
}

// One subtree per first byte. Where the first byte enters a JSON string body (a property name
// that may be any string, after the declared names' first bytes), the subtree's plain tokens
// are taken at once and only the others walked.
void GrammarMatcher::walk_trie(const std::vector<TrieNode>& trie, bool rest_trie,
                               const StackSet& root, StepMemo& memo, uint32_t* words) {
  const uint32_t from = memo.intern(root);
  for (uint32_t first = 0; first < trie.size(); first = trie[first].skip) {
    const uint32_t set = memo.advance(stepper_, from, trie[first].byte, scratch_);
    if (set == StepMemo::kDead) continue;
    const uint8_t byte = trie[first].byte;
    const int body = rest_trie ? 0 : json_body_chars(grammar_->grammar(), memo.set(set));
    if (body > 0) {
      // The first byte opened (or continued) a string body: its plain tokens at once.
      const TokenVocabulary& vocab = grammar_->vocab();
      const std::vector<int32_t>& plain = vocab.plain_by_first(byte);
      const size_t count = vocab.plain_by_first_count(byte, std::min(body, 0xFFFE) + 1);
      for (size_t k = 0; k < count; ++k) set_bit(words, plain[k]);
      const uint32_t rest = vocab.rest_root_child(byte);
      if (rest != TokenVocabulary::kNoNode) {
        walk_subtree(vocab.rest_trie(), rest, set, memo, words);
      }
      continue;
    }
    walk_subtree(trie, first, set, memo, words);
  }
}

void GrammarMatcher::walk_subtree(const std::vector<TrieNode>& trie, uint32_t first, uint32_t set,
                                  StepMemo& memo, uint32_t* words) {
  const TokenVocabulary& vocab = grammar_->vocab();
  const std::vector<int32_t>& tokens = vocab.trie_tokens();
  levels_.resize(vocab.max_token_bytes() + 1);
  levels_[1] = set;
  const uint32_t end = trie[first].skip;
  for (uint32_t i = first; i < end;) {
    const TrieNode& node = trie[i];
    if (i != first) {
      const uint32_t next = memo.advance(stepper_, levels_[node.depth - 1], node.byte, scratch_);
      if (next == StepMemo::kDead) {
        i = node.skip;
        continue;
      }
      levels_[node.depth] = next;
    }
    for (uint32_t k = 0; k < node.tokens_count; ++k) set_bit(words, tokens[node.tokens_begin + k]);
    ++i;
  }
}

}  // namespace pagedllm::structured
