// uniqueItems over listed values; refused for anything else.
#include "structured/json_schema_arrays.h"

#include <gtest/gtest.h>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

TEST(JsonSchemaArrays, UniqueItemsOfAnEnumNeverRepeatAValue) {
  auto g = schema(R"({"type": "array", "uniqueItems": true, "minItems": 1,
      "items": {"type": "string", "enum": ["r", "w", "x"]}})");
  EXPECT_TRUE(matches(*g, R"(["r"])"));
  EXPECT_TRUE(matches(*g, R"(["x", "r", "w"])"));
  EXPECT_FALSE(matches(*g, R"(["r","r"])"));
  EXPECT_FALSE(matches(*g, R"(["w","x","w"])"));
  EXPECT_FALSE(matches(*g, "[]"));
  auto flags = schema(R"({"type": "array", "uniqueItems": true, "items": {"type": "boolean"}})");
  EXPECT_TRUE(matches(*flags, "[true,false]"));
  EXPECT_TRUE(matches(*flags, "[]"));
  EXPECT_FALSE(matches(*flags, "[true,true]"));
}

TEST(JsonSchemaArrays, UniqueItemsOfAtMostOneItemNeedNothing) {
  auto g = schema(R"({"type": "array", "uniqueItems": true, "maxItems": 1,
      "items": {"type": "string"}})");
  EXPECT_TRUE(matches(*g, R"(["a"])"));
  EXPECT_FALSE(matches(*g, R"(["a","b"])"));
}

TEST(JsonSchemaArrays, UniqueItemsOfOtherItemsAreAnError) {
  EXPECT_EQ(error_of([] {
              schema(R"({"type": "array", "uniqueItems": true, "items": {"type": "string"}})");
            }),
            "unsupported keyword 'uniqueItems' at '#'");
  EXPECT_EQ(error_of([] {
              schema(R"({"type": "array", "uniqueItems": true,
                  "items": {"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9]}})");
            }),
            "unsupported keyword 'uniqueItems' at '#'");
}

}  // namespace
}  // namespace pagedllm::structured::test
