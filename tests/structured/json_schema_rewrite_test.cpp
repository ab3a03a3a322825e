// dependencies / dependentRequired / dependentSchemas and the simple forms of `not`.
#include "structured/json_schema_rewrite.h"

#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

TEST(JsonSchemaRewrite, DependentRequiredNeedsTheNamesOnlyWhenPresent) {
  for (const char* key : {"dependencies", "dependentRequired"}) {
    auto g = schema(std::string(R"({"type": "object", "properties": {"card": {"type": "string"},
        "billing": {"type": "string"}, "name": {"type": "string"}}, ")") +
                    key + R"(": {"card": ["billing"]}, "additionalProperties": false})");
    EXPECT_TRUE(matches(*g, R"({"name":"a"})")) << key;
    EXPECT_TRUE(matches(*g, R"({"billing":"x"})")) << key;
    EXPECT_TRUE(matches(*g, R"({"card":"1","billing":"x"})")) << key;
    EXPECT_FALSE(matches(*g, R"({"card":"1"})")) << key;
    EXPECT_FALSE(matches(*g, R"({"card":"1","name":"a"})")) << key;
  }
}

TEST(JsonSchemaRewrite, DependentSchemasApplyOnlyWhenPresent) {
  auto g = schema(R"({"type": "object", "properties": {"kind": {"type": "string"},
      "size": {"type": "integer"}}, "dependentSchemas": {"kind": {"properties":
      {"size": {"minimum": 10}}, "required": ["size"]}}})");
  EXPECT_TRUE(matches(*g, R"({"size":3})"));
  EXPECT_TRUE(matches(*g, R"({"kind":"a","size":12})"));
  EXPECT_FALSE(matches(*g, R"({"kind":"a","size":3})"));
  EXPECT_FALSE(matches(*g, R"({"kind":"a"})"));
}

TEST(JsonSchemaRewrite, TooManyDependenciesAreAnError) {
  EXPECT_EQ(error_of([] {
              schema(R"({"dependencies": {"a": ["b"], "b": ["c"], "c": ["d"], "d": ["e"],
                  "e": ["f"], "f": ["g"], "g": ["a"]}})");
            }),
            "unsupported keyword 'dependencies' (over 6 dependencies) at '#'");
}

TEST(JsonSchemaRewrite, NotRequiredIsAnObjectWithoutTheNames) {
  auto g = schema(R"({"properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}})");
  EXPECT_TRUE(matches(*g, R"({"a":1})"));
  EXPECT_TRUE(matches(*g, R"({"b":1})"));
  EXPECT_FALSE(matches(*g, R"({"a":1,"b":2})"));
  EXPECT_FALSE(matches(*g, "1"));  // not an object: "required" holds, so `not` fails
  auto none = schema(R"({"type": "object", "not": {"anyOf": [{"required": ["x"]},
      {"required": ["y"]}]}})");
  EXPECT_TRUE(matches(*none, R"({"z":1})"));
  EXPECT_FALSE(matches(*none, R"({"x":1})"));
  EXPECT_FALSE(matches(*none, R"({"z":1,"y":1})"));
}

TEST(JsonSchemaRewrite, NotTypeAndNotEmpty) {
  auto g = schema(R"({"not": {"type": ["null", "string"]}})");
  EXPECT_TRUE(matches(*g, "1.5"));
  EXPECT_TRUE(matches(*g, "[]"));
  EXPECT_FALSE(matches(*g, "null"));
  EXPECT_FALSE(matches(*g, R"("x")"));
  auto never = schema(R"({"type": "object", "properties": {"gone": {"not": {}}}})");
  EXPECT_TRUE(matches(*never, R"({"other":1})"));
  EXPECT_FALSE(matches(*never, R"({"gone":1})"));
  EXPECT_EQ(error_of([] { schema(R"({"not": {"pattern": "a"}})"); }),
            "unsupported keyword 'not' at '#'");
}

TEST(JsonSchemaRewrite, NotEnumLeavesTheValuesOutOfEachType) {
  auto g = schema(R"({"type": ["string", "integer", "boolean", "null"],
      "not": {"enum": ["none", 0, false, null]}})");
  EXPECT_TRUE(matches(*g, R"("nonE")"));
  EXPECT_TRUE(matches(*g, R"("non")"));
  EXPECT_TRUE(matches(*g, R"("nones")"));
  EXPECT_FALSE(matches(*g, R"("none")"));
  EXPECT_TRUE(matches(*g, "7"));
  EXPECT_FALSE(matches(*g, "0"));
  EXPECT_TRUE(matches(*g, "true"));
  EXPECT_FALSE(matches(*g, "false"));
  EXPECT_FALSE(matches(*g, "null"));
  auto number = schema(R"({"type": "number", "not": {"const": 1.5}})");
  EXPECT_FALSE(matches(*number, "1.5"));
  EXPECT_FALSE(matches(*number, "1.50"));
  EXPECT_TRUE(matches(*number, "1.25"));
  auto listed = schema(R"({"enum": ["a", "b"], "not": {"const": "a"}})");
  EXPECT_FALSE(matches(*listed, R"("a")"));
  EXPECT_TRUE(matches(*listed, R"("b")"));
  EXPECT_NE(error_of([] { schema(R"({"not": {"const": [1]}})"); }), "");
}

TEST(JsonSchemaRewrite, IfThenElseOnAPropertysValue) {
  auto g = schema(R"({"type": "object", "properties": {"kind": {"type": "string"},
      "url": {"type": "string"}, "path": {"type": "string"}},
      "if": {"properties": {"kind": {"const": "web"}}}, "then": {"required": ["url"]},
      "else": {"required": ["path"]}})");
  EXPECT_TRUE(matches(*g, R"({"kind":"web","url":"u"})"));
  EXPECT_FALSE(matches(*g, R"({"kind":"web","path":"p"})"));
  EXPECT_TRUE(matches(*g, R"({"kind":"file","path":"p"})"));
  EXPECT_FALSE(matches(*g, R"({"kind":"file","url":"u"})"));
  // No "kind": `if` holds (properties only looks at present names), so `then` applies.
  EXPECT_TRUE(matches(*g, R"({"url":"u"})"));
  EXPECT_FALSE(matches(*g, R"({"path":"p"})"));
  auto two = schema(R"({"type": "object", "allOf": [
      {"if": {"properties": {"a": {"const": 1}}, "required": ["a"]}, "then": {"required": ["b"]}},
      {"if": {"properties": {"c": {"const": 1}}, "required": ["c"]}, "then": {"required": ["d"]}}]})");
  EXPECT_TRUE(matches(*two, R"({"a":1,"c":2,"b":0})"));  // undeclared required names come last
  EXPECT_FALSE(matches(*two, R"({"a":1,"c":2})"));
  EXPECT_FALSE(matches(*two, R"({"a":0,"c":1})"));
  EXPECT_EQ(error_of([] { schema(R"({"if": {"maximum": 5}, "then": {"minimum": 5}})"); }),
            "unsupported keyword 'if' at '#'");
}

TEST(JsonSchemaRewrite, NotOverListedValuesChecksEachValue) {
  auto g = schema(R"({"allOf": [{"enum": [1, "a", {"foo": 2}, [1, 1]]},
      {"not": {"anyOf": [{"type": "string"},
          {"type": "object", "properties": {"foo": {"minimum": 2}}},
          {"type": "array", "uniqueItems": true}]}}]})");
  EXPECT_TRUE(matches(*g, "1"));
  EXPECT_TRUE(matches(*g, "[1,1]"));          // not unique, so `not` holds
  EXPECT_FALSE(matches(*g, R"("a")"));        // a string
  EXPECT_FALSE(matches(*g, R"({"foo":2})"));  // foo >= 2
  // A keyword the check does not know: no guess.
  EXPECT_EQ(error_of([] { schema(R"({"enum": [1], "not": {"$ref": "#"}})"); }),
            "unsupported keyword 'not' at '#'");
}

TEST(JsonSchemaRewrite, ListedValuesAreFilteredByTheOtherKeywords) {
  auto g = schema(R"({"enum": ["a", "abc", 7], "maxLength": 2})");
  EXPECT_TRUE(matches(*g, R"("a")"));
  EXPECT_FALSE(matches(*g, R"("abc")"));
  EXPECT_TRUE(matches(*g, "7"));  // maxLength says nothing of numbers
}

TEST(JsonSchemaRewrite, ListedValuesAreCheckedAgainstAnyKeyword) {
  auto g = schema(R"({"enum": [1, 2, 3], "oneOf": [{"minimum": 2}, {"maximum": 2}]})");
  EXPECT_TRUE(matches(*g, "1"));
  EXPECT_FALSE(matches(*g, "2"));  // both branches
  EXPECT_TRUE(matches(*g, "3"));
  auto cond = schema(R"({"const": "x", "if": {"type": "string"}, "then": {"minLength": 2}})");
  EXPECT_FALSE(matches(*cond, R"("x")"));
}

TEST(JsonSchemaRewrite, AllOfKeepsOneOfTwoDifferentAnnotations) {
  auto g = schema(R"({"allOf": [{"type": "integer", "markdownDescription": "a"},
      {"minimum": 3, "markdownDescription": "b"}]})");
  EXPECT_TRUE(matches(*g, "3"));
  EXPECT_FALSE(matches(*g, "2"));
  auto both = schema(R"({"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "b$"}]})");
  EXPECT_TRUE(matches(*both, R"("axb")"));
  EXPECT_FALSE(matches(*both, R"("ax")"));
  EXPECT_FALSE(matches(*both, R"("xb")"));
  EXPECT_EQ(error_of([] { schema(R"({"allOf": [{"multipleOf": 2}, {"multipleOf": 3}]})"); }),
            "allOf with two different 'multipleOf' at '#/allOf/1'");
}

TEST(JsonSchemaRewrite, AllOfMergesTwoAnyOfsAndTwoNots) {
  auto g = schema(R"({"allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]},
      {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string", "maxLength": 2}]}]})");
  EXPECT_TRUE(matches(*g, "7"));
  EXPECT_TRUE(matches(*g, R"("ab")"));
  EXPECT_FALSE(matches(*g, "3"));
  EXPECT_FALSE(matches(*g, R"("abc")"));
  EXPECT_FALSE(matches(*g, "7.5"));
  auto nots = schema(R"({"type": "object", "allOf": [{"not": {"required": ["a"]}},
      {"not": {"required": ["b"]}}]})");
  EXPECT_TRUE(matches(*nots, R"({"c":1})"));
  EXPECT_FALSE(matches(*nots, R"({"a":1})"));
  EXPECT_FALSE(matches(*nots, R"({"b":1})"));
}

}  // namespace
}  // namespace pagedllm::structured::test
