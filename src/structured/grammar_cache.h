// The entry points: compile a grammar given as JSON Schema, regex, GBNF, a choice list or "any
// JSON object", with caches keyed by the grammar's text, so requests that repeat a schema
// compile it once and share the masks computed for it.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pagedllm/sampling.h"
#include "structured/compiled_grammar.h"
#include "structured/json_schema_compiler.h"
#include "structured/matcher.h"
#include "structured/token_vocabulary.h"

namespace pagedllm::structured {

enum class GrammarKind { kJsonSchema, kRegex, kGbnf, kChoice, kJsonObject };

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  std::string text;                  // the schema, regex or GBNF text
  std::vector<std::string> choices;  // kChoice
  JsonSchemaOptions json;            // kJsonSchema, kJsonObject
};

// A request's constraint as a spec. Throws GrammarError unless exactly one kind is set.
GrammarSpec grammar_spec_of(const StructuredOutputs& outputs);

// Front end, then compile_grammar. Throws GrammarError.
Grammar build_grammar(const GrammarSpec& spec);
std::shared_ptr<const CompiledGrammar> compile(const GrammarSpec& spec,
                                               const CompileLimits& limits = {});

// The key both caches use: everything in the spec that changes the grammar.
std::string grammar_key(const GrammarSpec& spec);

// Values by key, least recently used dropped past `capacity`; `make` runs outside the lock, so
// different keys build in parallel. Thread-safe.
template <typename Value>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {}

  std::shared_ptr<const Value> get(const std::string& key,
                                   const std::function<std::shared_ptr<const Value>()>& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    auto value = make();
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->second;
    lru_.emplace_front(key, value);
    index_[key] = lru_.begin();
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return value;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lru_.size();
  }

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const Value>>> lru_;
  std::unordered_map<std::string, typename decltype(lru_)::iterator> index_;
};

// Compiled grammars by spec. Thread-safe.
class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 256, CompileLimits limits = {})
      : cache_(capacity), limits_(limits) {}
  std::shared_ptr<const CompiledGrammar> get(const GrammarSpec& spec);
  size_t size() const { return cache_.size(); }

 private:
  LruCache<CompiledGrammar> cache_;
  CompileLimits limits_;
};

// Grammars bound to the model's vocabulary, by spec: what the engine checks a request with and
// the worker makes matchers from. The vocabulary is built on first use (a 150k-token vocabulary
// takes a moment), so an engine that never sees a constrained request never pays for it.
// Thread-safe.
class TokenGrammarCache {
 public:
  using VocabularyFactory = std::function<std::shared_ptr<const TokenVocabulary>()>;
  explicit TokenGrammarCache(VocabularyFactory make_vocabulary, size_t capacity = 256,
                             CompileLimits limits = {});

  // Throws GrammarError for a constraint that does not compile.
  std::shared_ptr<const TokenGrammar> get(const StructuredOutputs& outputs);
  std::shared_ptr<const TokenVocabulary> vocabulary();
  size_t size() const { return cache_.size(); }

 private:
  VocabularyFactory make_vocabulary_;
  std::once_flag vocabulary_once_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  LruCache<TokenGrammar> cache_;
  CompileLimits limits_;
};

}  // namespace pagedllm::structured
