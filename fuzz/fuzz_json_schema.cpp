// libFuzzer target: the JSON Schema compiler. The input is a schema, or a MaskBench file
// ({"schema": ..., "tests": ...}) whose schema is used. A schema compiles or is refused with a
// GrammarError; a compiled one's masks and accepted tokens agree.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "structured/json_schema_compiler.h"
#include "structured_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedllm::structured;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  if (schema.is_object() && schema.contains("schema") && schema.contains("tests")) {
    schema = schema["schema"];
  }
  std::shared_ptr<const CompiledGrammar> grammar;
  try {
    grammar = compile_grammar(grammar_from_json_schema_value(schema, {.compact = size % 2 == 0}),
                              {.max_nfa_nodes = 300'000, .max_seconds = 10.0});
  } catch (const GrammarError&) {
    return 0;
  }
  fuzz::exercise_matcher(grammar, static_cast<uint32_t>(size * 2654435761u));
  return 0;
}
