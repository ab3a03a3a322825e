// allOf as one schema: keywords merged one by one (properties recursively, required as a
// union, bounds as the tighter one, enums as the common values). Two different values of a
// keyword that cannot be merged are a GrammarError, never one of them silently dropped.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pagedllm::structured {

// The key, inside a schema, listing values it must not be (`not` with enum or const,
// rewritten; the compiler honours it per type).
inline constexpr const char* kExcludedKey = "x-pagedllm-excluded";

// The key listing further patterns a string must match (allOf with two different `pattern`s).
inline constexpr const char* kPatternsKey = "x-pagedllm-patterns";

// Whether the schema has any keyword besides annotations (title, description, $defs, x-...).
bool has_validation(const nlohmann::ordered_json& s);

// The schema both a and b describe; `ptr` names the place in errors.
nlohmann::ordered_json merge_schemas(const nlohmann::ordered_json& a,
                                     const nlohmann::ordered_json& b, const std::string& ptr);

}  // namespace pagedllm::structured
