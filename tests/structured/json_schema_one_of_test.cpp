// oneOf: a discriminator that is not required, and overlapping string branches.
#include "structured/json_schema_one_of.h"

#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

TEST(JsonSchemaOneOf, DiscriminatorNotRequiredBecomesRequired) {
  auto g = schema(R"({"type": "object", "oneOf": [
      {"properties": {"op": {"enum": ["add", "replace"]}, "value": {}}, "required": ["value"]},
      {"properties": {"op": {"enum": ["remove"]}}}]})");
  EXPECT_TRUE(matches(*g, R"({"op":"add","value":1})"));
  EXPECT_TRUE(matches(*g, R"({"op":"remove"})"));
  EXPECT_FALSE(matches(*g, R"({"op":"add"})"));   // the first branch needs a value
  EXPECT_FALSE(matches(*g, R"({"op":"move"})"));  // neither branch
  // Without "op" both branches may match (then oneOf fails): left out.
  EXPECT_FALSE(matches(*g, R"({"value":1})"));
}

TEST(JsonSchemaOneOf, OpenObjectBranchesForbidTheOthersRequiredNames) {
  auto g = schema(R"({"oneOf": [
      {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
      {"type": "object", "properties": {"email": {"type": "string"},
          "key": {"type": "string"}}, "required": ["email", "key"]}]})");
  EXPECT_TRUE(matches(*g, R"({"token":"t"})"));
  EXPECT_TRUE(matches(*g, R"({"token":"t","other":1})"));
  EXPECT_TRUE(matches(*g, R"({"email":"e","key":"k"})"));
  // Both branches match: oneOf fails, and the grammar leaves it out.
  EXPECT_FALSE(matches(*g, R"({"token":"t","email":"e","key":"k"})"));
  EXPECT_FALSE(matches(*g, R"({"email":"e","key":"k","token":"t"})"));
}

TEST(JsonSchemaOneOf, OverlappingStringBranchesAllowExactlyOne) {
  auto g = schema(R"({"oneOf": [{"type": "string", "pattern": "customer"},
      {"type": "string", "pattern": "maker"}, {"type": "null"}]})");
  EXPECT_TRUE(matches(*g, R"("customer 1")"));
  EXPECT_TRUE(matches(*g, R"("a maker")"));
  EXPECT_FALSE(matches(*g, R"("customer and maker")"));  // both branches: not oneOf
  EXPECT_FALSE(matches(*g, R"("other")"));
  EXPECT_TRUE(matches(*g, "null"));
  auto hosts = schema(R"({"type": "string", "oneOf": [{"format": "hostname"},
      {"format": "ipv4"}]})");
  EXPECT_TRUE(matches(*hosts, R"("example.com")"));
  EXPECT_FALSE(matches(*hosts, R"("10.0.0.1")"));  // a hostname too
  EXPECT_FALSE(matches(*hosts, R"("10.0.0.1.")"));
}

}  // namespace
}  // namespace pagedllm::structured::test
