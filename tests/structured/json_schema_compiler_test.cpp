#include "structured/json_schema_compiler.h"

#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

TEST(JsonSchemaCompiler, PropertiesInOrderWithRequiredAndOptional) {
  auto g = schema(R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer"}}, "required": ["name"], "additionalProperties": false})");
  EXPECT_TRUE(matches(*g, R"({"name":"Ada","age":36})"));
  EXPECT_TRUE(matches(*g, R"({"name": "Ada"})"));
  EXPECT_TRUE(matches(*g, "{\n  \"name\": \"Ada\",\n  \"age\": -3\n}"));
  EXPECT_FALSE(matches(*g, R"({"age":36})"));                 // name is required
  EXPECT_FALSE(matches(*g, R"({"name":"Ada","age":"36"})"));  // age is an integer
  EXPECT_FALSE(matches(*g, R"({"name":"Ada","extra":1})"));   // no additional properties
  EXPECT_FALSE(matches(*g, R"({"name":"Ada",})"));
}

TEST(JsonSchemaCompiler, AdditionalPropertiesDefaultTrueButNotForDeclaredNames) {
  auto g = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  EXPECT_TRUE(matches(*g, R"({"a":1,"b":"x"})"));
  EXPECT_TRUE(matches(*g, R"({"ab":"x"})"));
  EXPECT_TRUE(matches(*g, R"({})"));
  // "a" is declared: it cannot come back as an additional property with another type.
  EXPECT_FALSE(matches(*g, R"({"a":"x"})"));
  auto strict = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})",
                       {.strict_properties = true});
  EXPECT_FALSE(matches(*strict, R"({"a":1,"b":"x"})"));
  auto typed = schema(R"({"type": "object", "additionalProperties": {"type": "boolean"}})");
  EXPECT_TRUE(matches(*typed, R"({"x":true,"y":false})"));
  EXPECT_FALSE(matches(*typed, R"({"x":1})"));
}

TEST(JsonSchemaCompiler, StringLengthsPatternsAndFormats) {
  auto len = schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_FALSE(matches(*len, R"("a")"));
  EXPECT_TRUE(matches(*len, R"("ab")"));
  EXPECT_TRUE(matches(*len, R"("é\n")"));  // characters, an escape counting as one
  EXPECT_FALSE(matches(*len, R"("abcd")"));
  auto pattern = schema(R"({"type": "string", "pattern": "^[a-z]+-\\d{2}$"})");
  EXPECT_TRUE(matches(*pattern, R"("abc-42")"));
  EXPECT_FALSE(matches(*pattern, R"("abc-4")"));
  auto search = schema(R"({"type": "string", "pattern": "ab"})");  // unanchored: contains
  EXPECT_TRUE(matches(*search, R"("xxabyy")"));
  EXPECT_FALSE(matches(*search, R"("xxayy")"));
  auto date = schema(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(matches(*date, R"("2024-02-29T13:05:00Z")"));
  EXPECT_FALSE(matches(*date, R"("2024-13-01T00:00:00Z")"));
  auto uuid = schema(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(matches(*uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(matches(*uuid, R"("123e4567")"));
  auto ipv4 = schema(R"({"format": "ipv4"})");
  EXPECT_TRUE(matches(*ipv4, R"("192.168.0.255")"));
  EXPECT_FALSE(matches(*ipv4, R"("192.168.0.256")"));
  auto ipv6 = schema(R"({"format": "ipv6"})");
  EXPECT_TRUE(matches(*ipv6, R"("fe80::1")"));
  EXPECT_TRUE(matches(*ipv6, R"("2001:db8:0:0:0:0:2:1")"));
  EXPECT_FALSE(matches(*ipv6, R"("fe80:::1")"));
  auto email = schema(R"({"format": "email"})");
  EXPECT_TRUE(matches(*email, R"("ada@example.org")"));
  EXPECT_FALSE(matches(*email, R"("ada.example.org")"));
}

TEST(JsonSchemaCompiler, IntegerAndNumberBounds) {
  auto range = schema(R"({"type": "integer", "minimum": -15, "exclusiveMaximum": 120})");
  for (int v = -40; v <= 200; ++v) {
    EXPECT_EQ(matches(*range, std::to_string(v)), v >= -15 && v < 120) << v;
  }
  EXPECT_FALSE(matches(*range, "007"));  // JSON has no leading zeros
  auto open = schema(R"({"type": "integer", "minimum": 98})");
  EXPECT_FALSE(matches(*open, "97"));
  EXPECT_TRUE(matches(*open, "98"));
  EXPECT_TRUE(matches(*open, "123456789012"));
  auto number = schema(R"({"type": "number", "minimum": 0, "maximum": 10})");
  EXPECT_TRUE(matches(*number, "9.75"));
  EXPECT_TRUE(matches(*number, "10.0"));
  EXPECT_FALSE(matches(*number, "10.5"));
  EXPECT_FALSE(matches(*number, "-1"));
  // Only a maximum: negative numbers are below it too (they used to be left out).
  auto below = schema(R"({"type": "number", "maximum": 10})");
  EXPECT_TRUE(matches(*below, "-3.5"));
  EXPECT_TRUE(matches(*below, "-1234"));
  EXPECT_TRUE(matches(*below, "7.25"));
  EXPECT_TRUE(matches(*below, "10"));
  EXPECT_FALSE(matches(*below, "10.5"));
  EXPECT_FALSE(matches(*below, "11"));
  auto negative = schema(R"({"type": "number", "maximum": -2})");
  EXPECT_TRUE(matches(*negative, "-2"));
  EXPECT_TRUE(matches(*negative, "-5.5"));
  EXPECT_FALSE(matches(*negative, "-1.5"));
  EXPECT_FALSE(matches(*negative, "0"));
  auto any = schema(R"({"type": "number"})");
  EXPECT_TRUE(matches(*any, "-1.5e+10"));
  EXPECT_FALSE(matches(*any, "1."));
}

TEST(JsonSchemaCompiler, ArraysWithPrefixItemsAndCounts) {
  auto g = schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1,
                      "maxItems": 3})");
  EXPECT_FALSE(matches(*g, "[]"));
  EXPECT_TRUE(matches(*g, "[1]"));
  EXPECT_TRUE(matches(*g, "[1, 2, 3]"));
  EXPECT_FALSE(matches(*g, "[1,2,3,4]"));
  auto tuple = schema(R"({"type": "array", "prefixItems": [{"type": "string"},
      {"type": "boolean"}], "items": false})");
  EXPECT_TRUE(matches(*tuple, R"(["a",true])"));
  EXPECT_TRUE(matches(*tuple, R"(["a"])"));
  EXPECT_FALSE(matches(*tuple, R"(["a",true,1])"));
  EXPECT_FALSE(matches(*tuple, R"([true])"));
  auto draft7 = schema(R"({"items": [{"type": "null"}], "additionalItems": {"type": "integer"}})");
  EXPECT_TRUE(matches(*draft7, "[null,1,2]"));
  EXPECT_FALSE(matches(*draft7, "[null,\"x\"]"));
}

TEST(JsonSchemaCompiler, EnumConstAnyOfAllOfAndTypeLists) {
  auto e = schema(R"({"enum": ["red", 3, null, {"k": [1]}]})");
  EXPECT_TRUE(matches(*e, R"("red")"));
  EXPECT_TRUE(matches(*e, "3"));
  EXPECT_TRUE(matches(*e, "null"));
  EXPECT_TRUE(matches(*e, R"({ "k": [ 1 ] })"));
  EXPECT_FALSE(matches(*e, R"("blue")"));
  auto c = schema(R"({"const": "fixed"})");
  EXPECT_TRUE(matches(*c, R"("fixed")"));
  EXPECT_FALSE(matches(*c, R"("fixe")"));
  auto any_of = schema(R"({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]})");
  EXPECT_TRUE(matches(*any_of, R"("x")"));
  EXPECT_TRUE(matches(*any_of, "7"));
  EXPECT_FALSE(matches(*any_of, "4"));
  auto all_of = schema(R"({"allOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      {"properties": {"b": {"type": "string"}}, "required": ["b"]}],
      "additionalProperties": false})");
  EXPECT_TRUE(matches(*all_of, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(matches(*all_of, R"({"a":1})"));
  auto types = schema(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(matches(*types, "null"));
  EXPECT_TRUE(matches(*types, R"("s")"));
  EXPECT_FALSE(matches(*types, "1"));
}

TEST(JsonSchemaCompiler, RecursiveRefsAndJsonPointers) {
  auto g = schema(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array",
      "items": {"$ref": "#/$defs/node"}}}, "required": ["v"], "additionalProperties": false}}})");
  EXPECT_TRUE(matches(*g, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"));
  EXPECT_FALSE(matches(*g, R"({"v":1,"kids":[{"kids":[]}]})"));
  auto pointer = schema(R"({"properties": {"x": {"$ref": "#/definitions/a~1b"}},
      "definitions": {"a/b": {"type": "boolean"}}, "required": ["x"]})");
  EXPECT_TRUE(matches(*pointer, R"({"x":true})"));
  EXPECT_FALSE(matches(*pointer, R"({"x":1})"));
}

TEST(JsonSchemaCompiler, PatternPropertiesAndPropertyNames) {
  auto g = schema(R"({"type": "object", "patternProperties": {"^x-": {"type": "integer"}},
      "additionalProperties": false})");
  EXPECT_TRUE(matches(*g, R"({"x-a":1,"x-b":2})"));
  EXPECT_FALSE(matches(*g, R"({"y":1})"));
  auto names = schema(R"({"type": "object", "propertyNames": {"maxLength": 2}})");
  EXPECT_TRUE(matches(*names, R"({"ab":1})"));
  EXPECT_FALSE(matches(*names, R"({"abc":1})"));
}

// Between tokens: nothing, one space, or a line break and up to max_whitespace of indentation.
TEST(JsonSchemaCompiler, WhitespaceIsBoundedAndCompactAllowsNone) {
  auto g = schema(R"({"type": "array"})", {.max_whitespace = 4});
  EXPECT_TRUE(matches(*g, "[ 1, 2 ]"));
  EXPECT_TRUE(matches(*g, "[\n    1,\r\n\t2\n]"));
  EXPECT_FALSE(matches(*g, "[\n     1]"));  // five spaces of indentation
  EXPECT_FALSE(matches(*g, "[  1]"));       // two spaces without a line break
  EXPECT_FALSE(matches(*g, "[\n\n1]"));     // a blank line
  auto compact = schema(R"({"type": "object"})", {.compact = true});
  EXPECT_TRUE(matches(*compact, R"({"a":[1,2]})"));
  EXPECT_FALSE(matches(*compact, R"({"a": 1})"));
}

TEST(JsonSchemaCompiler, AnyJsonObject) {
  auto g = compile_grammar(any_json_object_grammar({}));
  EXPECT_TRUE(matches(*g, R"({"a":[1,{"b":null}],"c":"\u00e9"})"));
  EXPECT_FALSE(matches(*g, "[1]"));
  EXPECT_FALSE(matches(*g, R"({"a":})"));
}

TEST(JsonSchemaCompiler, UnsupportedKeywordsAreErrorsNamingKeywordAndPointer) {
  EXPECT_EQ(error_of([] { schema(R"({"properties": {"a": {"not": {"minLength": 3}}}})"); }),
            "unsupported keyword 'not' at '#/properties/a'");
  EXPECT_EQ(error_of([] { schema(R"({"type": "array", "uniqueItems": true})"); }),
            "unsupported keyword 'uniqueItems' at '#'");
  EXPECT_EQ(error_of([] { schema(R"({"$ref": "http://x/y.json"})"); }),
            "unsupported $ref 'http://x/y.json' (only local refs) at '#'");
}

TEST(JsonSchemaCompiler, UnknownFormatsAreAnnotations) {
  auto g = schema(R"({"type": "string", "format": "color"})");
  EXPECT_TRUE(matches(*g, R"("any text")"));
  EXPECT_FALSE(matches(*g, "1"));
}

TEST(JsonSchemaCompiler, BadSchemasAreErrors) {
  EXPECT_NE(error_of([] { schema("{\"type\": "); }).find("schema is not valid JSON"),
            std::string::npos);
  EXPECT_EQ(error_of([] { schema(R"({"type": "strin"})"); }), "unknown type 'strin' at '#'");
  EXPECT_EQ(error_of([] {
              schema(R"({"allOf": [{"$ref": "#"}]})");
            }).rfind("allOf nested over 32 deep (a $ref cycle?) at '#/allOf/0/allOf/0/", 0),
            0u);
  EXPECT_EQ(error_of([] { schema(R"({"$ref": "#/nowhere"})"); }),
            "$ref '#/nowhere' points nowhere at '#'");
  EXPECT_NE(error_of([] { schema(R"({"type": "string", "minLength": "x"})"); }), "");
  EXPECT_EQ(error_of([] { schema(R"({"type": "string", "pattern": "(a"})"); }),
            "regex: missing ')' at offset 2 in 'pattern' at '#'");
}

}  // namespace
}  // namespace pagedllm::structured::test
