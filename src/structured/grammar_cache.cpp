#include "structured/grammar_cache.h"

#include "structured/gbnf_parser.h"
#include "structured/regex_compiler.h"

namespace pagedllm::structured {

Grammar build_grammar(const GrammarSpec& spec) {
  switch (spec.kind) {
    case GrammarKind::kJsonSchema:
      return grammar_from_json_schema(std::string_view(spec.text), spec.json);
    case GrammarKind::kRegex:
      return grammar_from_regex(spec.text);
    case GrammarKind::kGbnf:
      return grammar_from_gbnf(spec.text);
    case GrammarKind::kChoice:
      return grammar_from_choices(spec.choices);
    case GrammarKind::kJsonObject:
      return any_json_object_grammar(spec.json);
  }
  throw GrammarError("unknown grammar kind");
}

std::shared_ptr<const CompiledGrammar> compile(const GrammarSpec& spec,
                                               const CompileLimits& limits) {
  return compile_grammar(build_grammar(spec), limits);
}

std::string GrammarCache::key_of(const GrammarSpec& spec) {
  std::string key = std::to_string(static_cast<int>(spec.kind)) + ":" +
                    (spec.json.compact ? "c" : "w") + std::to_string(spec.json.max_whitespace) +
                    (spec.json.strict_properties ? "s" : "l") + ":";
  key += spec.text;
  for (const std::string& c : spec.choices) key += "\x1f" + std::to_string(c.size()) + ":" + c;
  return key;
}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const GrammarSpec& spec) {
  const std::string key = key_of(spec);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto compiled = compile(spec);  // outside the lock: compiles may run in parallel
  std::lock_guard<std::mutex> lock(mutex_);
  if (index_.count(key)) return index_.at(key)->second;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

}  // namespace pagedllm::structured
