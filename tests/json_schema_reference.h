// Ajv (npm, draft 2020-12) as the independent JSON Schema validator the structured-output tests
// check outputs with.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"
#include "tokenizer/corpus.h"

namespace pagedllm::test {

// Ajv's verdict on each text: "valid" or "invalid <why>".
inline std::vector<std::string> ajv_verdicts(const std::string& schema,
                                             const std::vector<std::string>& texts) {
  static int calls = 0;
  const std::string tag = std::to_string(calls++);
  const std::string schema_file = temp_path("ajv-schema-" + tag + ".json");
  const std::string texts_file = temp_path("ajv-texts-" + tag + ".json");
  std::ofstream(schema_file) << schema;
  std::ofstream(texts_file) << nlohmann::json(texts).dump();
  std::istringstream lines(run_command("node " + std::string(PAGEDLLM_SOURCE_DIR) +
                                       "/tests/node/validate_json_schema.mjs " + schema_file + " " +
                                       texts_file));
  std::vector<std::string> verdicts;
  for (std::string line; std::getline(lines, line);) verdicts.push_back(line);
  // One verdict per text, so that a caller may index them: a validator that could not run
  // (node or ajv missing) is a failed check, not a crash.
  if (verdicts.size() != texts.size()) {
    ADD_FAILURE() << "ajv gave " << verdicts.size() << " verdicts for " << texts.size() << " texts";
    verdicts.resize(texts.size(), "no verdict");
  }
  return verdicts;
}

}  // namespace pagedllm::test
