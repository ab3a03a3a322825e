// GBNF, llama.cpp's EBNF grammar syntax (also what XGrammar's EBNF accepts), into the grammar
// form: `name ::= ...` rules, "literals", [classes], ., ( ), |, * + ? {m,n}, # comments; the
// start rule is `root`.
#pragma once

#include <string_view>

#include "structured/grammar.h"

namespace pagedllm::structured {

// Throws GrammarError("gbnf: LINE:COLUMN: what").
Grammar grammar_from_gbnf(std::string_view text);

// One of the given strings exactly (a choice list).
Grammar grammar_from_choices(const std::vector<std::string>& choices);

}  // namespace pagedllm::structured
