// Number bounds with fractions, exclusive bounds, bounds across zero and multipleOf.
#include "structured/json_schema_numbers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "structured/grammar_test_util.h"

namespace pagedllm::structured::test {
namespace {

std::string text_of(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

TEST(JsonSchemaNumbers, DecimalsFromJsonNumbers) {
  const auto d = [](const char* text) { return *decimal_of(nlohmann::ordered_json::parse(text)); };
  EXPECT_EQ(d("12.50").whole, "12");
  EXPECT_EQ(d("12.50").fraction, "5");
  EXPECT_EQ(d("-0.001").fraction, "001");
  EXPECT_TRUE(d("-0.001").negative);
  EXPECT_EQ(d("1e-05").fraction, "00001");
  EXPECT_EQ(d("1.5e3").whole, "1500");
  EXPECT_TRUE(d("1.5e3").fraction.empty());
  EXPECT_FALSE(d("-0.0").negative);
  EXPECT_EQ(d("1.7976931348623157e308").whole.size(), 309u);
}

TEST(JsonSchemaNumbers, FractionalBoundsCrossingZeroCompareExactly) {
  auto g = schema(R"({"type": "number", "minimum": -1.5, "maximum": 2.25})");
  for (int i = -300; i <= 300; ++i) {
    const double v = i / 100.0;
    EXPECT_EQ(matches(*g, text_of(v, 2)), v >= -1.5 && v <= 2.25) << text_of(v, 2);
  }
  EXPECT_TRUE(matches(*g, "-1.50000"));
  EXPECT_TRUE(matches(*g, "-0"));
  EXPECT_TRUE(matches(*g, "2.2499999"));
  EXPECT_FALSE(matches(*g, "2.2500001"));
  EXPECT_FALSE(matches(*g, "-1.5000001"));
  EXPECT_FALSE(matches(*g, "02"));
  EXPECT_FALSE(matches(*g, "1."));
}

TEST(JsonSchemaNumbers, ExclusiveBoundsLeaveTheBoundOut) {
  auto g = schema(R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5})");
  EXPECT_FALSE(matches(*g, "0"));
  EXPECT_FALSE(matches(*g, "0.000"));
  EXPECT_FALSE(matches(*g, "-0.1"));
  EXPECT_TRUE(matches(*g, "0.0001"));
  EXPECT_TRUE(matches(*g, "0.4999"));
  EXPECT_FALSE(matches(*g, "0.5"));
  EXPECT_FALSE(matches(*g, "0.50"));
  // Draft 4's boolean form.
  auto d4 = schema(R"({"type": "number", "minimum": -2, "exclusiveMinimum": true})");
  EXPECT_FALSE(matches(*d4, "-2"));
  EXPECT_FALSE(matches(*d4, "-2.0"));
  EXPECT_TRUE(matches(*d4, "-1.99"));
  EXPECT_TRUE(matches(*d4, "1e3"));  // no upper bound: every e+k number is within
  auto below_zero = schema(R"({"type": "number", "exclusiveMaximum": 0})");
  EXPECT_TRUE(matches(*below_zero, "-0.01"));
  EXPECT_FALSE(matches(*below_zero, "-0"));
  EXPECT_FALSE(matches(*below_zero, "0.01"));
}

TEST(JsonSchemaNumbers, IntegerMultiplesWithinBounds) {
  auto g = schema(R"({"type": "integer", "multipleOf": 7, "minimum": -30, "maximum": 100})");
  for (int v = -60; v <= 150; ++v) {
    EXPECT_EQ(matches(*g, std::to_string(v)), v % 7 == 0 && v >= -30 && v <= 100) << v;
  }
  auto any = schema(R"({"type": "integer", "multipleOf": 12})");
  EXPECT_TRUE(matches(*any, "123456789012"));
  EXPECT_FALSE(matches(*any, "123456789013"));
  EXPECT_FALSE(matches(*any, "12.0"));
}

TEST(JsonSchemaNumbers, DecimalMultiples) {
  auto cents = schema(R"({"type": "number", "multipleOf": 0.01})");
  EXPECT_TRUE(matches(*cents, "19.99"));
  EXPECT_TRUE(matches(*cents, "-3.5"));
  EXPECT_TRUE(matches(*cents, "7"));
  EXPECT_TRUE(matches(*cents, "0.070"));
  EXPECT_FALSE(matches(*cents, "0.001"));
  EXPECT_FALSE(matches(*cents, "19.995"));
  auto halves = schema(R"({"type": "number", "multipleOf": 2.5, "maximum": 10})");
  EXPECT_TRUE(matches(*halves, "7.5"));
  EXPECT_TRUE(matches(*halves, "-5"));
  EXPECT_TRUE(matches(*halves, "10.00"));
  EXPECT_FALSE(matches(*halves, "12.5"));
  EXPECT_FALSE(matches(*halves, "6"));
  EXPECT_FALSE(matches(*halves, "2.25"));
  auto whole = schema(R"({"type": "number", "multipleOf": 5})");
  EXPECT_TRUE(matches(*whole, "15.0"));
  EXPECT_FALSE(matches(*whole, "15.5"));
}

TEST(JsonSchemaNumbers, ExponentFormsOnlyWhereTheBoundsHoldForAllOfThem) {
  auto unit = schema(R"({"type": "number", "minimum": 0, "maximum": 1})");
  EXPECT_TRUE(matches(*unit, "1e-06"));
  EXPECT_TRUE(matches(*unit, "2.5E-3"));
  EXPECT_FALSE(matches(*unit, "1e+06"));
  EXPECT_FALSE(matches(*unit, "-1e-06"));
  EXPECT_FALSE(matches(*unit, "1e-0"));  // 1 by value, but e-0 is not of the small form
  auto tight = schema(R"({"type": "number", "minimum": 0.001, "maximum": 1})");
  EXPECT_FALSE(matches(*tight, "1e-06"));  // some e-k numbers are below 0.001
  auto large = schema(R"({"type": "number", "minimum": 5})");
  EXPECT_TRUE(matches(*large, "1.5e+20"));
  EXPECT_FALSE(matches(*large, "1e-06"));
}

TEST(JsonSchemaNumbers, ListedIntegralNumbersInEitherSpelling) {
  auto g = schema(R"({"enum": [2.0, 3, 1.5]})");
  EXPECT_TRUE(matches(*g, "2"));
  EXPECT_TRUE(matches(*g, "2.0"));
  EXPECT_TRUE(matches(*g, "3.0"));
  EXPECT_TRUE(matches(*g, "1.5"));
  EXPECT_FALSE(matches(*g, "2.5"));
  EXPECT_FALSE(matches(*g, "3.5"));
}

TEST(JsonSchemaNumbers, HugeModulusIsAnErrorNamingMultipleOf) {
  EXPECT_EQ(error_of([] { schema(R"({"items": {"type": "integer", "multipleOf": 1000000007}})"); }),
            "unsupported keyword 'multipleOf': multipleOf needs an automaton over 6000 states at "
            "'#/items'");
}

}  // namespace
}  // namespace pagedllm::structured::test
