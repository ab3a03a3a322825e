// Checks one JSON value against a schema, for the schemas that list their values (an enum with
// a `not`, an enum with other keywords): each listed value is kept or dropped by what the
// keywords say of it. Only keywords checked exactly here give a verdict; anything else is
// kUnknown, and the caller must not guess.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pagedllm::structured {

enum class Verdict { kValid, kInvalid, kUnknown };

Verdict validate(const nlohmann::ordered_json& value, const nlohmann::ordered_json& schema);

// Whether `value` is of the JSON Schema type `type` ("integer" takes 2.0 too); false for a name
// that is not a type.
bool has_type(const nlohmann::ordered_json& value, const std::string& type);

}  // namespace pagedllm::structured
