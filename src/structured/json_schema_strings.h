// String schemas: lengths, `pattern` and `format`, alone or together. One constraint alone is
// compiled directly (the matcher's fast path for plain string bodies stays usable); two or more
// are intersected as automata (json_schema_regular.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/grammar.h"
#include "structured/json_schema_regular.h"

namespace pagedllm::structured {

// The JSON string (quotes included) for the string keywords of `s`; `ptr` names the schema in
// errors.
int32_t add_string_schema(Grammar& g, const nlohmann::ordered_json& s, const std::string& ptr);

// oneOf over string schemas made of regular constraints (type string, pattern, format, lengths,
// string enum/const): the strings exactly one branch allows, as an automaton over the values.
// nullopt when a branch is of another kind (a schema without a type counts as its strings only:
// a subset of what it allows, so nothing invalid gets in).
std::optional<CharDfa> exactly_one_string(const std::vector<nlohmann::ordered_json>& branches);

// A JSON string (quotes included) whose value the automaton accepts.
int32_t add_string_dfa(Grammar& g, const CharDfa& dfa);

}  // namespace pagedllm::structured
