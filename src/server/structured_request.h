// The request fields that constrain the output's shape, as OpenAI and vLLM name them, read into
// SamplingParams::structured_outputs:
//   response_format          {"type": "text" | "json_object" | "json_schema", "json_schema": ...}
//   structured_outputs       vLLM's {"json" | "regex" | "choice" | "grammar" | "json_object": ...}
//   guided_json, guided_regex, guided_choice, guided_grammar   vLLM's older names
// At most one of them may constrain a request; each failure is an ApiError(400) naming the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagedllm/sampling.h"

namespace pagedllm::server {

// Every field name this reads (the request parser marks them as known).
const std::vector<std::string>& structured_output_field_names();

struct StructuredOutputRequest {
  std::optional<StructuredOutputs> outputs;
  std::string param;  // the field it came from, for errors found later (the grammar's compile)
};

StructuredOutputRequest parse_structured_output_fields(const nlohmann::ordered_json& body);

// A JSON Schema given as an object, a boolean or a JSON text, as the schema's text.
std::string schema_text(const nlohmann::ordered_json& schema, const std::string& param);

}  // namespace pagedllm::server
