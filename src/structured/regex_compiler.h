// Regular expressions (the ECMAScript/Python subset schemas and users write: classes, Unicode
// escapes, quantifiers, alternation, groups, anchors at the ends of top-level branches, also
// inside a branch that is one group as in "(^a$)|(^b$)") into the grammar form.
#pragma once

#include <cstdint>
#include <string_view>

#include "structured/grammar.h"

namespace pagedllm::structured {

struct RegexMode {
  // Match the text as it appears inside a JSON string: '"', '\\' and controls escaped.
  bool json_string = false;
  // JSON Schema's `pattern`: the regex may match anywhere unless anchored with ^ / $.
  bool search = false;
};

// Adds the regex to `g`; returns its expression. Throws GrammarError("regex: ... at offset N").
int32_t add_regex(Grammar& g, std::string_view pattern, RegexMode mode = {});

// A grammar matching exactly the strings the regex matches in full.
Grammar grammar_from_regex(std::string_view pattern);

// The expression for one character of `set`, as written inside a JSON string when json_string.
int32_t add_char_set(Grammar& g, const CodePointSet& set, bool json_string);

}  // namespace pagedllm::structured
