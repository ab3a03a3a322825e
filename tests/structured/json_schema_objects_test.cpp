// patternProperties with additional properties allowed, declared names matching a pattern,
// keys matching several patterns; property counts.
#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"
#include "structured/json_schema_regular.h"

namespace pagedllm::structured::test {
namespace {

TEST(JsonSchemaPatternProperties, OtherKeysTakeAdditionalProperties) {
  auto g = schema(R"({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}})");
  EXPECT_TRUE(matches(*g, R"({"x-a":1,"other":"text"})"));
  EXPECT_FALSE(matches(*g, R"({"x-a":"text"})"));  // a matching key takes the pattern's schema
  EXPECT_TRUE(matches(*g, R"({"y-a":"text"})"));
  auto typed = schema(R"({"type": "object", "patternProperties": {"^n_": {"type": "number"}},
      "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(matches(*typed, R"({"n_a":1.5,"b":"x"})"));
  EXPECT_FALSE(matches(*typed, R"({"b":1})"));
  EXPECT_FALSE(matches(*typed, R"({"n_a":"x"})"));
}

TEST(JsonSchemaPatternProperties, KeysMatchingTwoPatternsSatisfyBoth) {
  auto g = schema(R"({"type": "object", "patternProperties": {
      "^a": {"type": "integer"}, "b$": {"minimum": 10}}, "additionalProperties": false})");
  EXPECT_TRUE(matches(*g, R"({"ax":3})"));
  EXPECT_TRUE(matches(*g, R"({"xb":13.5})"));
  EXPECT_TRUE(matches(*g, R"({"ab":12})"));
  EXPECT_FALSE(matches(*g, R"({"ab":3})"));     // "b$" wants at least 10
  EXPECT_FALSE(matches(*g, R"({"ab":12.5})"));  // "^a" wants an integer
  EXPECT_FALSE(matches(*g, R"({"c":1})"));
}

TEST(JsonSchemaPatternProperties, DeclaredNamesMatchingAPatternSatisfyBoth) {
  auto g = schema(R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "patternProperties": {"^i": {"minimum": 5}}, "additionalProperties": false})");
  EXPECT_TRUE(matches(*g, R"({"id":7})"));
  EXPECT_FALSE(matches(*g, R"({"id":3})"));
  EXPECT_FALSE(matches(*g, R"({"id":7.5})"));
  EXPECT_TRUE(matches(*g, R"({"id":7,"ix":9.5})"));
  EXPECT_FALSE(matches(*g, R"({"ix":9,"id":7})"));  // declared names come first, once
}

TEST(JsonSchemaPatternProperties, RequiredUndeclaredNamesTakeAdditionalProperties) {
  auto g = schema(R"({"type": "object", "required": ["n"],
      "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(matches(*g, R"({"n":"x"})"));
  EXPECT_FALSE(matches(*g, R"({"n":1})"));
  EXPECT_FALSE(matches(*g, R"({})"));
}

TEST(JsonSchemaObjects, PropertyCountsOfAdditionalMembers) {
  auto g = schema(R"({"type": "object", "additionalProperties": {"type": "integer"},
      "minProperties": 1, "maxProperties": 2})");
  EXPECT_FALSE(matches(*g, "{}"));
  EXPECT_TRUE(matches(*g, R"({"a":1})"));
  EXPECT_TRUE(matches(*g, R"({"a":1, "b":2})"));
  EXPECT_FALSE(matches(*g, R"({"a":1,"b":2,"c":3})"));
  auto one = schema(R"({"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 1,
      "additionalProperties": false})");
  EXPECT_FALSE(matches(*one, "{}"));
  EXPECT_TRUE(matches(*one, R"({"b":null})"));
  EXPECT_EQ(error_of([] {
              schema(R"({"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 2})");
            }),
            "unsupported keyword 'minProperties' at '#'");
}

TEST(JsonSchemaObjects, VacuousKeywordsSayNothingOfTheType) {
  // Object keywords alone make a schema an object one, unless they allow everything.
  auto g = schema(R"({"additionalProperties": true, "properties": {}, "required": []})");
  EXPECT_TRUE(matches(*g, R"("text")"));
  EXPECT_TRUE(matches(*g, "5"));
  auto typed = schema(R"({"properties": {"a": {}}})");
  EXPECT_FALSE(matches(*typed, R"("text")"));
  auto format = schema(R"({"format": "positiveInteger"})");  // unknown: an annotation
  EXPECT_TRUE(matches(*format, "1"));
}

TEST(JsonSchemaRegular, ProductSplitsKeysByMatchingParts) {
  const CharDfa a = dfa_from_regex("^a", true), b = dfa_from_regex("b$", true);
  const ProductDfa p = product({&a, &b});
  // The strings where exactly both match: "ab", "axb", ...
  std::vector<bool> both;
  for (const auto& acc : p.accepts) both.push_back(acc[0] && acc[1]);
  const CharDfa ab = with_accepting(p.dfa, both);
  EXPECT_TRUE(dfa_matches(ab, "ab"));
  EXPECT_TRUE(dfa_matches(ab,
                          "a\xC3\xA9"
                          "b"));
  EXPECT_FALSE(dfa_matches(ab, "a"));
  EXPECT_FALSE(dfa_matches(ab, "xb"));
  const CharDfa names = dfa_of_strings({"id", "idx"});
  EXPECT_TRUE(dfa_matches(names, "id"));
  EXPECT_FALSE(dfa_matches(names, "i"));
  EXPECT_TRUE(dfa_matches(intersect(names, dfa_of_length(3, 3)), "idx"));
  EXPECT_FALSE(dfa_matches(intersect(names, dfa_of_length(3, 3)), "id"));
}

}  // namespace
}  // namespace pagedllm::structured::test
