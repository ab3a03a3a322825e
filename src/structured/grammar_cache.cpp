#include "structured/grammar_cache.h"

#include "structured/gbnf_parser.h"
#include "structured/regex_compiler.h"

namespace pagedllm::structured {

GrammarSpec grammar_spec_of(const StructuredOutputs& outputs) {
  GrammarSpec spec;
  int kinds = 0;
  if (outputs.json) {
    spec.kind = GrammarKind::kJsonSchema;
    spec.text = *outputs.json;
    ++kinds;
  }
  if (outputs.regex) {
    spec.kind = GrammarKind::kRegex;
    spec.text = *outputs.regex;
    ++kinds;
  }
  if (outputs.choice) {
    spec.kind = GrammarKind::kChoice;
    spec.choices = *outputs.choice;
    ++kinds;
  }
  if (outputs.grammar) {
    spec.kind = GrammarKind::kGbnf;
    spec.text = *outputs.grammar;
    ++kinds;
  }
  if (outputs.json_object) {
    spec.kind = GrammarKind::kJsonObject;
    ++kinds;
  }
  if (kinds != 1) {
    throw GrammarError(
        "structured outputs need exactly one of json, regex, choice, grammar or json_object "
        "(got " +
        std::to_string(kinds) + ")");
  }
  if (spec.kind == GrammarKind::kChoice && spec.choices.empty())
    throw GrammarError("a choice needs at least one option");
  spec.json.compact = outputs.disable_any_whitespace;
  spec.json.strict_properties = outputs.disable_additional_properties;
  return spec;
}

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

std::string grammar_key(const GrammarSpec& spec) {
  std::string key = std::to_string(static_cast<int>(spec.kind)) + ":" +
                    (spec.json.compact ? "c" : "w") + std::to_string(spec.json.max_whitespace) +
                    (spec.json.strict_properties ? "s" : "l") + ":";
  key += spec.text;
  for (const std::string& c : spec.choices) key += "\x1f" + std::to_string(c.size()) + ":" + c;
  return key;
}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const GrammarSpec& spec) {
  return cache_.get(grammar_key(spec), [&] { return compile(spec, limits_); });
}

TokenGrammarCache::TokenGrammarCache(VocabularyFactory make_vocabulary, size_t capacity,
                                     CompileLimits limits)
    : make_vocabulary_(std::move(make_vocabulary)), cache_(capacity), limits_(limits) {}

std::shared_ptr<const TokenVocabulary> TokenGrammarCache::vocabulary() {
  std::call_once(vocabulary_once_, [this] { vocabulary_ = make_vocabulary_(); });
  return vocabulary_;
}

std::shared_ptr<const TokenGrammar> TokenGrammarCache::get(const StructuredOutputs& outputs) {
  const GrammarSpec spec = grammar_spec_of(outputs);
  return cache_.get(grammar_key(spec), [&] {
    return std::make_shared<const TokenGrammar>(compile(spec, limits_), vocabulary());
  });
}

}  // namespace pagedllm::structured
