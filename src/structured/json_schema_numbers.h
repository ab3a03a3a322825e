// Number constraints as digit patterns: bounds with fractions, exclusive bounds and bounds that
// cross zero, compared digit by digit on the number's text, and multipleOf as remainders kept
// while the digits are read. Each constraint is a regular language over the number's text; two
// at once are intersected as automata (json_schema_regular.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/grammar.h"

namespace pagedllm::structured {

// An exact decimal: digits before and after the point, no leading zeros before it (except a
// lone "0") and no trailing zeros after it.
struct Decimal {
  bool negative = false;
  std::string whole = "0";
  std::string fraction;

  bool is_zero() const { return whole == "0" && fraction.empty(); }
};

// The decimal a JSON number stands for (as written by nlohmann's dump(), exponents resolved);
// nullopt for an exponent past +-400 or a value that is not a number.
std::optional<Decimal> decimal_of(const nlohmann::ordered_json& value);

struct NumberBound {
  Decimal value;
  bool inclusive = true;
};

struct NumberConstraints {
  std::vector<NumberBound> lower, upper;  // all hold
  std::optional<Decimal> multiple_of;     // positive
  std::vector<Decimal> excluded;          // values it must not be (`not` with enum or const)
  bool integer = false;                   // no fraction part at all
};

// The JSON numbers (no exponent; a fraction unless `integer`) satisfying `c`. Throws
// GrammarError when the automaton would be too large (a huge modulus).
int32_t add_number(Grammar& g, const NumberConstraints& c);

// Any JSON number, exponents included (only unconstrained numbers may have one).
int32_t add_any_number(Grammar& g);

// The number or integer schema `s` (minimum, maximum, both exclusive forms including draft 4's
// booleans, multipleOf); `ptr` names it in errors.
int32_t add_number_schema(Grammar& g, const nlohmann::ordered_json& s, bool integer,
                          const std::string& ptr);

}  // namespace pagedllm::structured
