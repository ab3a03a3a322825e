// Keywords the grammar cannot express directly, rewritten into ones it can: dependencies
// (dependentRequired, dependentSchemas) into two alternatives per property, "absent" or
// "present with what it brings", and `not` in its simple forms (no schema, a type, required
// names) into forbidden names and type lists. Forms left over stay errors naming the keyword.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace pagedllm::structured {

// Each property's dependency split off into anyOf branches; nullopt when `s` has none.
// Throws GrammarError past kMaxDependencies (the branches double with each).
std::optional<nlohmann::ordered_json> rewrite_dependencies(const nlohmann::ordered_json& s,
                                                           const std::string& ptr);

inline constexpr size_t kMaxDependencies = 6;

// `s` without its `not` (rewritten); nullopt when `s` has none. Throws GrammarError
// ("unsupported keyword 'not'") for a form it cannot rewrite.
std::optional<nlohmann::ordered_json> rewrite_not(const nlohmann::ordered_json& s,
                                                  const std::string& ptr);

// if/then/else when `if` tests one property against listed values ({"properties": {"p":
// {"const": v}}}, enum too, "required": ["p"] or not): anyOf over "not an object", "p absent",
// "p one of the values" (with then) and "p another value" (with else). nullopt when `s` has no
// `if`; GrammarError for other forms of `if`.
std::optional<nlohmann::ordered_json> rewrite_if(const nlohmann::ordered_json& s,
                                                 const std::string& ptr);

}  // namespace pagedllm::structured
