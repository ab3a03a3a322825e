// The MaskBench check (guidance-ai/jsonschemabench's mask benchmark) on one schema file:
// compile the schema, then walk every test instance's tokens through the grammar's masks,
// compact and indented. `pagedllm bench structured` runs it over a folder; the tests run it on
// a sample as a correctness corpus.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/token_vocabulary.h"

namespace pagedllm {
class Tokenizer;
}

namespace pagedllm::structured {

struct MaskBenchTally {
  int schemas = 0, passing = 0, compile_errors = 0, crashes = 0, timeouts = 0;
  int valid_rejected = 0, invalid_accepted = 0, valid_instances = 0, invalid_instances = 0;
  std::vector<double> mask_us, compile_us;
  std::vector<std::string> problems;            // "file: what went wrong", one per failure
  static constexpr double kSlowMaskUs = 20000;  // masks slower than this are listed too
};

// One file. A file that is not JSON is skipped (a line on stderr), not counted.
void run_maskbench_file(const std::filesystem::path& path, const Tokenizer& tokenizer,
                        const std::shared_ptr<const TokenVocabulary>& vocab, MaskBenchTally& tally);

// {"schemas", "passing", ..., "mask_us": {...}, "compile_us": {...}}; sorts the timings.
nlohmann::ordered_json maskbench_report(MaskBenchTally& tally);

// The instance with its keys in the schema's property order, then the others as they were: the
// order a decoder constrained by the schema writes them in.
nlohmann::ordered_json in_schema_order(const nlohmann::ordered_json& data,
                                       const nlohmann::ordered_json& schema,
                                       const nlohmann::ordered_json& root, int depth = 0);

}  // namespace pagedllm::structured
