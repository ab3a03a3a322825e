// JSON Schema (draft 2020-12 and draft-07 forms) into the grammar form. A keyword that cannot be
// enforced is a GrammarError naming it and its JSON pointer, never silently ignored.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "structured/grammar.h"

namespace pagedllm::structured {

struct JsonSchemaOptions {
  // No whitespace at all between tokens.
  bool compact = false;
  // Whitespace between tokens is nothing, one space, or a line break followed by at most this
  // many spaces or tabs of indentation (so a weak model cannot loop on whitespace).
  int max_whitespace = 40;
  // additionalProperties defaults to false instead of the specification's true.
  bool strict_properties = false;
};

// Throws GrammarError (also for schema text that is not JSON).
Grammar grammar_from_json_schema(std::string_view schema_text, const JsonSchemaOptions& options);
Grammar grammar_from_json_schema_value(const nlohmann::ordered_json& schema,
                                       const JsonSchemaOptions& options);
// Any JSON object ({"type": "json_object"} requests).
Grammar any_json_object_grammar(const JsonSchemaOptions& options);

}  // namespace pagedllm::structured
