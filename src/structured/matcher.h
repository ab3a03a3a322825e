// Matching a compiled grammar against the model's tokens: the allowed-token bitmask for the
// current state, advancing by a token, rolling back.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/token_vocabulary.h"

namespace pagedllm::structured {

// The parser state: a set of stacks, flat as [length, frames...]*. A stack's last frame is the
// state the parser stands in, the frames below it the states to return to.
struct StackSet {
  std::vector<uint32_t> data;
  bool can_end = false;  // the whole input so far is a sentence of the grammar
  bool empty() const { return data.empty() && !can_end; }
};

// Finds repeated stacks in a flat buffer: a scan while the buffer holds few, a hash table past
// that (a choice among many properties expands into one stack per property).
class StackIndex {
 public:
  void clear();
  // Whether the stack at data[start..] repeats an earlier one; if not, it is indexed.
  bool repeats(const std::vector<uint32_t>& data, size_t start);

 private:
  static constexpr size_t kScanUpTo = 8;
  void insert(const std::vector<uint32_t>& data, uint32_t start);
  void grow(const std::vector<uint32_t>& data);

  size_t count_ = 0;
  std::vector<uint32_t> slots_;  // offset + 1, 0 empty; only past kScanUpTo stacks
};

// Moves stack sets through bytes. Holds scratch buffers, so one per thread.
class Stepper {
 public:
  explicit Stepper(const CompiledGrammar& g) : g_(g) {}
  // The start rule's stacks.
  StackSet initial();
  // `in` after `byte` into `out` (cleared first); false when no stack survives.
  bool step(const uint32_t* in, size_t in_len, uint8_t byte, StackSet& out);
  bool step_bytes(const StackSet& in, std::string_view bytes, StackSet& out);

  static constexpr size_t kMaxDepth = 2048;  // deeper stacks are dropped (no match)

 private:
  void closure(std::vector<uint32_t>& stack, StackSet& out);
  static void add_unique(const std::vector<uint32_t>& stack, std::vector<uint32_t>& out,
                         StackIndex& index);

  const CompiledGrammar& g_;
  std::vector<uint32_t> work_, visited_;
  StackIndex out_index_, visited_index_;
};

// Stack sets by content, with their byte transitions filled in as trie walks meet them. A
// mask walks one trie node per token prefix (274k nodes for Llama 3's 128k tokens), and most
// nodes lead from a set already seen by a byte already tried: those cost one table lookup
// instead of a step.
class StepMemo {
 public:
  static constexpr uint32_t kUnknown = UINT32_MAX;   // not stepped yet
  static constexpr uint32_t kDead = UINT32_MAX - 1;  // no stack survives the byte
  // Past this many sets (1 KiB of table each) the memo starts afresh: 4 MiB per grammar at most.
  static constexpr size_t kMaxSets = 4096;

  uint32_t intern(const StackSet& set);
  const StackSet& set(uint32_t id) const { return sets_[id]; }
  uint32_t next(uint32_t id, uint8_t byte) const { return table_[size_t{id} * 256 + byte]; }
  void set_next(uint32_t id, uint8_t byte, uint32_t to) { table_[size_t{id} * 256 + byte] = to; }
  // The set after `from` reads `byte`: from the table, else stepped and recorded.
  uint32_t advance(Stepper& stepper, uint32_t from, uint8_t byte, StackSet& scratch);
  size_t size() const { return sets_.size(); }
  void clear();

 private:
  std::vector<StackSet> sets_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<uint32_t> table_;  // [set][byte]: the set after the byte, kUnknown or kDead
};

// A compiled grammar bound to a vocabulary, with the masks computed so far (cached by parser
// state, shared by every matcher made from it; thread-safe).
class TokenGrammar {
 public:
  TokenGrammar(std::shared_ptr<const CompiledGrammar> grammar,
               std::shared_ptr<const TokenVocabulary> vocab);
  const CompiledGrammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }

  bool cached_mask(const StackSet& state, uint32_t* words) const;
  void cache_mask(const StackSet& state, const uint32_t* words) const;

  static constexpr size_t kMaxCachedBytes = 64u << 20;

  // A step memo for one mask computation at a time: lent out, then given back, so that the
  // transitions found by one matcher serve the next (requests sharing a schema, later steps).
  std::unique_ptr<StepMemo> borrow_memo() const;
  void give_back(std::unique_ptr<StepMemo> memo) const;

  static std::string key_of(const StackSet& state);

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::vector<uint32_t>> masks_;
  mutable size_t cached_bytes_ = 0;
  mutable std::vector<std::unique_ptr<StepMemo>> memos_;
};

// One request's position in the grammar. Cheap to make; not thread-safe (one per request).
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const TokenGrammar> grammar);

  // words: vocab().mask_words() uint32 words; bit i of word i/32 set = token i allowed.
  // After a stop token was accepted, only stop tokens are allowed.
  void fill_next_token_bitmask(uint32_t* words);
  // Advances by one token; false (state unchanged) when the token is not allowed here. A stop
  // token is accepted where the grammar can end, and terminates the matcher; once terminated,
  // it accepts stop tokens only.
  bool accept_token(int32_t token);
  // Advances by raw bytes (a prompt's forced prefix, tests); false and unchanged on mismatch.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last n accepted tokens (n <= num_accepted()).
  void rollback(size_t n);
  void reset();

  bool can_end() const { return history_.back().can_end; }
  bool is_terminated() const { return terminated_.back() != 0; }
  size_t num_accepted() const { return history_.size() - 1; }
  const TokenGrammar& grammar() const { return *grammar_; }

 private:
  void compute_mask(const StackSet& state, uint32_t* words);
  void walk_trie(const std::vector<TrieNode>& trie, bool rest_trie, const StackSet& root,
                 StepMemo& memo, uint32_t* words);
  // Nodes [first, trie[first].skip) from `set`, the set after the first node's byte.
  void walk_subtree(const std::vector<TrieNode>& trie, uint32_t first, uint32_t set, StepMemo& memo,
                    uint32_t* words);

  std::shared_ptr<const TokenGrammar> grammar_;
  Stepper stepper_;
  std::vector<StackSet> history_;    // [0]: the start; one more per accepted token
  std::vector<uint8_t> terminated_;  // parallel to history_
  std::vector<uint32_t> levels_;     // the trie walk's set (a memo id) at each depth
  StackSet scratch_;
};

}  // namespace pagedllm::structured
