// String constraints together: pattern with format, either with a length (intersected).
#include "structured/json_schema_strings.h"

#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

TEST(JsonSchemaStrings, PatternWithLengthsIsTheIntersection) {
  auto g = schema(R"({"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4})");
  EXPECT_FALSE(matches(*g, R"("a")"));
  EXPECT_TRUE(matches(*g, R"("ab")"));
  EXPECT_TRUE(matches(*g, R"("abcd")"));
  EXPECT_FALSE(matches(*g, R"("abcde")"));
  EXPECT_FALSE(matches(*g, R"("ab1")"));
  // Unanchored: contains a digit, at most 3 characters, escapes counting as one.
  auto search = schema(R"({"type": "string", "pattern": "\\d", "maxLength": 3})");
  EXPECT_TRUE(matches(*search, R"("\n1\"")"));
  EXPECT_FALSE(matches(*search, R"("\n1\"x")"));
  EXPECT_FALSE(matches(*search, R"("abc")"));
}

TEST(JsonSchemaStrings, FormatWithPatternIsTheIntersection) {
  // What zod's z.uuid() sends: both a format and a pattern (version 1-8, RFC variant).
  auto g = schema(R"({"type": "string", "format": "uuid", "pattern":
      "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"})");
  EXPECT_TRUE(matches(*g, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(matches(*g, R"("123e4567-e89b-02d3-a456-426614174000")"));  // version 0
  // A pattern wider than the format: the format still holds.
  auto wide = schema(R"({"type": "string", "format": "ipv4", "pattern": "^[0-9.]+$"})");
  EXPECT_TRUE(matches(*wide, R"("10.0.0.255")"));
  EXPECT_FALSE(matches(*wide, R"("10.0.0.256")"));
  EXPECT_FALSE(matches(*wide, R"("10.0.0")"));
}

TEST(JsonSchemaStrings, FormatWithPatternAndLength) {
  auto g = schema(R"({"type": "string", "format": "date", "pattern": "^2024-", "maxLength": 10})");
  EXPECT_TRUE(matches(*g, R"("2024-02-29")"));
  EXPECT_FALSE(matches(*g, R"("2023-02-28")"));  // not the pattern
  EXPECT_FALSE(matches(*g, R"("2024-02-30")"));  // not a date
  auto uuid = schema(R"({"type": "string", "format": "uuid", "minLength": 36})");
  EXPECT_TRUE(matches(*uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  auto impossible = schema(R"({"type": "string", "format": "uuid", "maxLength": 10})");
  EXPECT_FALSE(matches(*impossible, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(matches(*impossible, R"("")"));
}

TEST(JsonSchemaStrings, LengthImpliedByThePatternNeedsNoCounting) {
  // 32767 characters would be too many states to count; the pattern is five digits anyway.
  auto g = schema(R"({"type": "string", "pattern": "^\\d{5}$", "maxLength": 32767})");
  EXPECT_TRUE(matches(*g, R"("12345")"));
  EXPECT_FALSE(matches(*g, R"("1234")"));
}

TEST(JsonSchemaStrings, TooLargeIntersectionIsAnErrorNamingTheKeywords) {
  EXPECT_NE(error_of([] {
              schema(R"({"type": "string", "pattern": "^[a-z]*x[a-z]{30}$", "maxLength": 90})");
            }).find("unsupported keyword 'maxLength/minLength' with 'pattern'"),
            std::string::npos);
}

}  // namespace
}  // namespace pagedllm::structured::test
