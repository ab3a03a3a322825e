// Helpers for the grammar tests: whole-string matching through the matcher's byte stepper.
#pragma once

#include <string>
#include <string_view>

#include "structured/compiled_grammar.h"
#include "structured/gbnf_parser.h"
#include "structured/json_schema_compiler.h"
#include "structured/matcher.h"
#include "structured/regex_compiler.h"

namespace pagedllm::structured::test {

// Whether `text` is a sentence of the grammar (every byte accepted, and the end allowed).
inline bool matches(const CompiledGrammar& g, std::string_view text) {
  Stepper stepper(g);
  StackSet state;
  return stepper.step_bytes(stepper.initial(), text, state) && state.can_end;
}

// Whether `text` can be continued into a sentence.
inline bool is_prefix(const CompiledGrammar& g, std::string_view text) {
  Stepper stepper(g);
  StackSet state;
  return stepper.step_bytes(stepper.initial(), text, state);
}

inline std::shared_ptr<const CompiledGrammar> schema(std::string_view text,
                                                     JsonSchemaOptions options = {}) {
  return compile_grammar(grammar_from_json_schema(text, options));
}

inline std::shared_ptr<const CompiledGrammar> regex(std::string_view pattern) {
  return compile_grammar(grammar_from_regex(pattern));
}

inline std::shared_ptr<const CompiledGrammar> gbnf(std::string_view text) {
  return compile_grammar(grammar_from_gbnf(text));
}

// The message of the GrammarError `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

}  // namespace pagedllm::structured::test
