// Pieces of the JSON Schema compiler that do not look at schemas: integer ranges as digit
// patterns, string formats as regexes, and JSON values as literals.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/grammar.h"

namespace pagedllm::structured {

// Throws GrammarError("<what> at '#<ptr>'"): every schema error names where it is.
[[noreturn]] void schema_fail(const std::string& what, const std::string& ptr);

// Decimal integers (JSON syntax: no leading zeros, "-" for negatives) in [lo, hi]; an absent
// bound is unbounded.
int32_t add_integer_range(Grammar& g, std::optional<int64_t> lo, std::optional<int64_t> hi);

// The regex (full match, as string content) for a JSON Schema format, or "" when unsupported.
std::string format_regex(const std::string& format);

// A JSON string (quotes included) that is none of `names`: the key of an additional property.
int32_t add_key_other_than(Grammar& g, const std::vector<std::string>& names);

// A JSON value written exactly as nlohmann's dump() writes it, with `ws` allowed around
// structural characters of arrays and objects.
int32_t add_json_literal(Grammar& g, const nlohmann::ordered_json& value, int32_t ws);

}  // namespace pagedllm::structured
