// The entry points: compile a grammar given as JSON Schema, regex, GBNF, a choice list or "any
// JSON object", with a cache keyed by the grammar's text, so requests that repeat a schema
// compile it once.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/json_schema_compiler.h"

namespace pagedllm::structured {

enum class GrammarKind { kJsonSchema, kRegex, kGbnf, kChoice, kJsonObject };

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  std::string text;                  // the schema, regex or GBNF text
  std::vector<std::string> choices;  // kChoice
  JsonSchemaOptions json;            // kJsonSchema, kJsonObject
};

// Front end, then compile_grammar. Throws GrammarError.
Grammar build_grammar(const GrammarSpec& spec);
std::shared_ptr<const CompiledGrammar> compile(const GrammarSpec& spec,
                                               const CompileLimits& limits = {});

// Compiled grammars by spec, least recently used dropped past `capacity`. Thread-safe.
class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 256) : capacity_(capacity) {}
  std::shared_ptr<const CompiledGrammar> get(const GrammarSpec& spec);
  size_t size() const;

 private:
  static std::string key_of(const GrammarSpec& spec);

  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const CompiledGrammar>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
};

}  // namespace pagedllm::structured
