#include "structured/json_schema_numbers.h"

#include <cmath>
#include <map>

#include "structured/json_schema_merge.h"
#include "structured/json_schema_parts.h"

#include "structured/json_schema_regular.h"

namespace pagedllm::structured {

namespace {

// One-sided languages over a number's text, built in a scratch grammar and intersected as
// automata: each is simple on its own, the intersection does the rest.
class NumberLanguages {
 public:
  explicit NumberLanguages(Grammar& g) : g_(g) {}

  // Every number: -?(0|[1-9][0-9]*)(\.[0-9]+)?, without the fraction when integer.
  int32_t any(bool integer) {
    return g_.seq({g_.optional(g_.literal("-")), natural(), integer ? g_.empty() : fraction()});
  }

  // Numbers >= lo (> when exclusive).
  int32_t at_least(const NumberBound& lo) {
    const Decimal& v = lo.value;
    if (v.is_zero()) {
      if (!lo.inclusive) return magnitude_above(v, false);
      // -0 and -0.00 are zero too.
      return g_.alt({magnitude_any(), g_.seq({g_.literal("-"), magnitude_below(v, true)})});
    }
    if (!v.negative) return magnitude_above(v, lo.inclusive);
    return g_.alt({magnitude_any(), g_.seq({g_.literal("-"), magnitude_below(v, lo.inclusive)})});
  }

  // Numbers <= hi (< when exclusive).
  int32_t at_most(const NumberBound& hi) {
    const Decimal& v = hi.value;
    if (v.is_zero()) {
      if (!hi.inclusive) return g_.seq({g_.literal("-"), magnitude_above(v, false)});
      return g_.alt({g_.seq({g_.literal("-"), magnitude_any()}), magnitude_below(v, true)});
    }
    if (v.negative) return g_.seq({g_.literal("-"), magnitude_above(v, hi.inclusive)});
    return g_.alt({g_.seq({g_.literal("-"), magnitude_any()}), magnitude_below(v, hi.inclusive)});
  }

 private:
  int32_t digit() { return g_.byte_range('0', '9'); }
  int32_t digits(int32_t min) { return g_.repeat(digit(), min, -1); }
  int32_t nonzero() { return g_.byte_range('1', '9'); }
  int32_t natural() { return g_.alt({g_.literal("0"), g_.seq({nonzero(), digits(0)})}); }
  int32_t fraction() { return g_.optional(g_.seq({g_.literal("."), digits(1)})); }
  int32_t magnitude_any() { return g_.seq({natural(), fraction()}); }
  int32_t some_nonzero() { return g_.seq({digits(0), nonzero(), digits(0)}); }
  int32_t digit_range(char lo, char hi) {
    return g_.byte_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
  }

  // Magnitudes (text without sign) >= v, or > v.
  int32_t magnitude_above(const Decimal& v, bool inclusive) {
    return g_.alt({g_.seq({natural_beyond(v.whole, true), fraction()}),
                   g_.seq({g_.literal(v.whole), fraction_at_least(v.fraction, inclusive)})});
  }

  // Magnitudes <= v, or < v.
  int32_t magnitude_below(const Decimal& v, bool inclusive) {
    return g_.alt({g_.seq({natural_beyond(v.whole, false), fraction()}),
                   g_.seq({g_.literal(v.whole), fraction_at_most(v.fraction, inclusive)})});
  }

  // Naturals strictly above (or below) a: more (fewer) digits, or as many and larger (smaller).
  int32_t natural_beyond(const std::string& a, bool above) {
    const auto n = static_cast<int32_t>(a.size());
    if (above) {
      return g_.alt({g_.seq({nonzero(), g_.repeat(digit(), n, -1)}), same_length(a, 0, true)});
    }
    std::vector<int32_t> alts;
    if (n >= 2)
      alts.push_back(g_.alt({g_.literal("0"), g_.seq({nonzero(), g_.repeat(digit(), 0, n - 2)})}));
    alts.push_back(same_length(a, 0, false));
    return g_.alt(std::move(alts));
  }

  // Digit strings as long as a[i..], strictly above (below) it; no leading zero at i == 0
  // unless a is one digit.
  int32_t same_length(const std::string& a, size_t i, bool above) {
    if (i == a.size()) return g_.nothing();
    const char c = a[i];
    const int32_t rest = static_cast<int32_t>(a.size() - i - 1);
    std::vector<int32_t> alts;
    const char floor = i == 0 && a.size() > 1 ? '1' : '0';
    if (above && c < '9')
      alts.push_back(g_.seq({digit_range(c + 1, '9'), g_.repeat(digit(), rest, rest)}));
    if (!above && c > floor) {
      alts.push_back(g_.seq({digit_range(floor, c - 1), g_.repeat(digit(), rest, rest)}));
    }
    alts.push_back(g_.seq({g_.literal(std::string(1, c)), same_length(a, i + 1, above)}));
    return g_.alt(std::move(alts));
  }

  // The optional fraction part (".ddd" or nothing) with 0.ddd >= 0.f (> when exclusive).
  int32_t fraction_at_least(const std::string& f, bool inclusive) {
    if (f.empty()) {
      return inclusive ? fraction() : g_.seq({g_.literal("."), some_nonzero()});
    }
    return g_.seq({g_.literal("."), digits_at_least(f, 0, inclusive)});
  }

  // Non-empty digit strings d with 0.d >= 0.f[i..] (f has no trailing zeros).
  int32_t digits_at_least(const std::string& f, size_t i, bool inclusive) {
    const char c = f[i];
    std::vector<int32_t> alts;
    if (c < '9') alts.push_back(g_.seq({digit_range(c + 1, '9'), digits(0)}));
    const int32_t same = g_.literal(std::string(1, c));
    if (i + 1 < f.size()) {
      alts.push_back(g_.seq({same, digits_at_least(f, i + 1, inclusive)}));
    } else {
      alts.push_back(g_.seq({same, inclusive ? digits(0) : some_nonzero()}));
    }
    return g_.alt(std::move(alts));
  }

  // The optional fraction part with 0.ddd <= 0.h (< when exclusive).
  int32_t fraction_at_most(const std::string& h, bool inclusive) {
    if (h.empty()) {
      return inclusive ? g_.optional(g_.seq({g_.literal("."), g_.repeat(g_.literal("0"), 1, -1)}))
                       : g_.nothing();
    }
    return g_.optional(g_.seq({g_.literal("."), digits_at_most(h, 0, inclusive)}));
  }

  // Non-empty digit strings d with 0.d <= 0.h[i..].
  int32_t digits_at_most(const std::string& h, size_t i, bool inclusive) {
    const char c = h[i];
    std::vector<int32_t> alts;
    if (c > '0') alts.push_back(g_.seq({digit_range('0', c - 1), digits(0)}));
    const int32_t same = g_.literal(std::string(1, c));
    if (i + 1 < h.size()) {
      alts.push_back(g_.seq({same, g_.optional(digits_at_most(h, i + 1, inclusive))}));
    } else if (inclusive) {
      alts.push_back(g_.seq({same, g_.repeat(g_.literal("0"), 0, -1)}));
    }
    return g_.alt(std::move(alts));
  }

  Grammar& g_;
};

uint64_t small_integer(const std::string& digits) {
  uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

// Numbers whose value is a multiple of m = c * 10^-p: the digits read so far (the first p of
// the fraction included) are kept as a remainder modulo c, and digits past the p-th fraction
// digit must be zeros.
CharDfa multiple_dfa(const Decimal& m, bool integer) {
  std::string all = m.whole == "0" ? m.fraction : m.whole + m.fraction;
  all.erase(0, all.find_first_not_of('0'));
  const auto p = static_cast<uint64_t>(m.fraction.size());
  if (all.empty() || all.size() > 9 || p > 30 || small_integer(all) * (p + 3) > kMaxDfaStates) {
    throw GrammarError("multipleOf needs an automaton over " + std::to_string(kMaxDfaStates) +
                       " states");
  }
  const uint64_t c = small_integer(all);
  // State numbers: start, after '-', a zero whole part, then per remainder r: the whole part,
  // just after '.', j fraction digits read (1 <= j <= p), past the p-th digit.
  const auto whole = [&](uint64_t r) { return static_cast<uint32_t>(3 + r); };
  const auto dot = [&](uint64_t r) { return static_cast<uint32_t>(3 + c + r); };
  const auto frac = [&](uint64_t r, uint64_t j) {
    return static_cast<uint32_t>(3 + 2 * c + (j - 1) * c + r);
  };
  const auto zeros = [&](uint64_t r) { return static_cast<uint32_t>(3 + (2 + p) * c + r); };
  const auto pow10_mod = [&](uint64_t e) {
    uint64_t v = 1 % c;
    for (uint64_t i = 0; i < e; ++i) v = v * 10 % c;
    return v;
  };
  CharDfa dfa;
  dfa.states.resize(3 + (3 + p) * c);
  const auto edge = [&](uint32_t from, char lo, char hi, uint32_t to) {
    CodePointSet s;
    s.add(static_cast<uint32_t>(lo), static_cast<uint32_t>(hi));
    dfa.states[from].edges.push_back({s, to});
  };
  // Digits d0..d9 from `from`, each to next(d), merged by target.
  const auto digit_edges = [&](uint32_t from, auto next, char first) {
    std::map<uint32_t, CodePointSet> by_target;
    for (char d = first; d <= '9'; ++d) by_target[next(static_cast<uint64_t>(d - '0'))].add(d, d);
    for (auto& [to, set] : by_target) dfa.states[from].edges.push_back({set, to});
  };
  edge(0, '-', '-', 1);
  for (uint32_t s : {0u, 1u}) {
    edge(s, '0', '0', 2);
    digit_edges(
        s, [&](uint64_t d) { return whole(d % c); }, '1');
  }
  dfa.states[2].accept = true;
  if (!integer) edge(2, '.', '.', dot(0));
  for (uint64_t r = 0; r < c; ++r) {
    digit_edges(
        whole(r), [&](uint64_t d) { return whole((10 * r + d) % c); }, '0');
    dfa.states[whole(r)].accept = r * pow10_mod(p) % c == 0;
    if (integer) continue;
    edge(whole(r), '.', '.', dot(r));
    if (p == 0) {
      edge(dot(r), '0', '0', zeros(r));
    } else {
      digit_edges(
          dot(r), [&](uint64_t d) { return frac((10 * r + d) % c, 1); }, '0');
    }
    for (uint64_t j = 1; j <= p; ++j) {
      dfa.states[frac(r, j)].accept = r * pow10_mod(p - j) % c == 0;
      if (j < p) {
        digit_edges(
            frac(r, j), [&](uint64_t d) { return frac((10 * r + d) % c, j + 1); }, '0');
      } else {
        edge(frac(r, j), '0', '0', zeros(r));
      }
    }
    dfa.states[zeros(r)].accept = r == 0;
    edge(zeros(r), '0', '0', zeros(r));
  }
  return dfa;
}

using json = nlohmann::ordered_json;

// Draft 4 writes exclusive bounds as booleans beside minimum/maximum.
json numeric_bounds(const json& s) {
  json out = s;
  for (const auto& [flag, bound] :
       {std::pair{"exclusiveMinimum", "minimum"}, std::pair{"exclusiveMaximum", "maximum"}}) {
    if (!out.contains(flag) || !out[flag].is_boolean()) continue;
    const bool exclusive = out[flag].get<bool>();
    out.erase(flag);
    if (exclusive && out.contains(bound)) {
      out[flag] = out[bound];
      out.erase(bound);
    }
  }
  return out;
}

std::optional<double> number_at(const json& s, const char* key) {
  if (s.contains(key) && s[key].is_number()) return s[key].get<double>();
  return std::nullopt;
}

// Integers with bounds only: digit patterns straight from the bounds (no automaton needed).
int32_t integer_range(Grammar& g, const json& s) {
  std::optional<int64_t> lo, hi;
  // Bounds past the 64-bit range (2^63 written as 9223372036854776000) clamp to it.
  const auto clamp = [](double v) {
    return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v);
  };
  if (auto v = number_at(s, "minimum")) lo = clamp(std::ceil(*v));
  if (auto v = number_at(s, "exclusiveMinimum")) {
    const int64_t x = clamp(std::floor(*v) + 1);
    lo = lo ? std::max(*lo, x) : x;
  }
  if (auto v = number_at(s, "maximum")) hi = clamp(std::floor(*v));
  if (auto v = number_at(s, "exclusiveMaximum")) {
    const int64_t x = clamp(std::ceil(*v) - 1);
    hi = hi ? std::min(*hi, x) : x;
  }
  if (lo || hi) return add_integer_range(g, lo, hi);
  return g.seq({g.optional(g.literal("-")),
                g.alt({g.literal("0"),
                       g.seq({g.byte_range('1', '9'), g.repeat(g.byte_range('0', '9'), 0, -1)})})});
}

// -1, 0 or 1 as a is below, equal to or above b.
int compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int magnitude = 0;
  if (a.whole.size() != b.whole.size()) {
    magnitude = a.whole.size() < b.whole.size() ? -1 : 1;
  } else if (a.whole != b.whole) {
    magnitude = a.whole < b.whole ? -1 : 1;
  } else if (a.fraction != b.fraction) {
    magnitude = a.fraction < b.fraction ? -1 : 1;  // no trailing zeros: text order is value order
  }
  return a.negative ? -magnitude : magnitude;
}

Decimal decimal(const char* text) {
  return *decimal_of(json::parse(text));
}

// Whether every number strictly between lo and hi satisfies the bounds (callers pass a lo or
// hi a little outside a closed end).
bool bounds_hold_on(const NumberConstraints& c, std::optional<Decimal> lo,
                    std::optional<Decimal> hi) {
  for (const NumberBound& b : c.lower) {
    if (!lo || compare(b.value, *lo) > 0) return false;
  }
  for (const NumberBound& b : c.upper) {
    if (!hi || compare(b.value, *hi) < 0) return false;
  }
  return true;
}

// Numbers written with an exponent (how serializers write 1e-06 or 1e+20): the digit automata
// cannot compare them, so each form is allowed only where every number it can write is
// within the bounds: [1-9](.d+)?e-k lies strictly between 0 and 1, e+k at 10 or above.
int32_t exponent_forms(Grammar& g, const NumberConstraints& c) {
  if (c.integer || c.multiple_of || !c.excluded.empty()) return g.nothing();
  const int32_t digit = g.byte_range('0', '9');
  const int32_t mantissa =
      g.seq({g.byte_range('1', '9'), g.optional(g.seq({g.literal("."), g.repeat(digit, 1, -1)}))});
  const int32_t positive_exponent =
      g.seq({g.repeat(g.literal("0"), 0, -1), g.byte_range('1', '9'), g.repeat(digit, 0, -1)});
  const int32_t e = g.alt({g.literal("e"), g.literal("E")});
  const int32_t small = g.seq({mantissa, e, g.literal("-"), positive_exponent});
  const int32_t large = g.seq({mantissa, e, g.optional(g.literal("+")), positive_exponent});
  const int32_t minus = g.literal("-");
  std::vector<int32_t> alts;
  if (bounds_hold_on(c, decimal("0"), decimal("1"))) alts.push_back(small);
  if (bounds_hold_on(c, decimal("-1"), decimal("0"))) alts.push_back(g.seq({minus, small}));
  if (bounds_hold_on(c, decimal("9"), std::nullopt)) alts.push_back(large);
  if (bounds_hold_on(c, std::nullopt, decimal("-9"))) alts.push_back(g.seq({minus, large}));
  return g.alt(std::move(alts));
}

Decimal decimal_at(const json& s, const char* key, const std::string& ptr) {
  const auto d = decimal_of(s[key]);
  if (!d) schema_fail(std::string("'") + key + "' is not a number of a supported size", ptr);
  return *d;
}

}  // namespace

std::optional<Decimal> decimal_of(const nlohmann::ordered_json& value) {
  if (!value.is_number()) return std::nullopt;
  const std::string text = value.dump();
  Decimal out;
  size_t i = 0;
  if (text[i] == '-') {
    out.negative = true;
    ++i;
  }
  std::string digits;
  int64_t exponent = 0;  // value = digits * 10^exponent
  bool after_point = false;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      after_point = true;
      continue;
    }
    digits += text[i];
    if (after_point) --exponent;
  }
  if (i < text.size()) {
    const int64_t e = std::stoll(text.substr(i + 1));
    if (e > 400 || e < -400) return std::nullopt;
    exponent += e;
  }
  if (exponent >= 0) {
    out.whole = digits + std::string(static_cast<size_t>(exponent), '0');
  } else {
    const auto point = static_cast<size_t>(-exponent);
    if (digits.size() <= point) digits.insert(0, point - digits.size() + 1, '0');
    out.whole = digits.substr(0, digits.size() - point);
    out.fraction = digits.substr(digits.size() - point);
  }
  out.whole.erase(0, std::min(out.whole.find_first_not_of('0'), out.whole.size() - 1));
  while (!out.fraction.empty() && out.fraction.back() == '0') out.fraction.pop_back();
  if (out.is_zero()) out.negative = false;
  return out;
}

int32_t add_number(Grammar& g, const NumberConstraints& c) {
  Grammar scratch;
  NumberLanguages lang(scratch);
  CharDfa dfa = dfa_from_expr(scratch, lang.any(c.integer));
  for (const NumberBound& b : c.lower)
    dfa = intersect(dfa, dfa_from_expr(scratch, lang.at_least(b)));
  for (const NumberBound& b : c.upper)
    dfa = intersect(dfa, dfa_from_expr(scratch, lang.at_most(b)));
  if (c.multiple_of) dfa = intersect(dfa, multiple_dfa(*c.multiple_of, c.integer));
  for (const Decimal& v : c.excluded) {
    // Every way of writing v (1, 1.0, 1.00, ...) left out.
    const NumberBound at{v, true};
    const CharDfa equal = intersect(dfa_from_expr(scratch, lang.at_least(at)),
                                    dfa_from_expr(scratch, lang.at_most(at)));
    dfa = intersect(dfa, complement(equal));
  }
  return add_dfa(g, dfa, false);
}

int32_t add_any_number(Grammar& g) {
  const int32_t digits = g.repeat(g.byte_range('0', '9'), 1, -1);
  return g.seq({g.optional(g.literal("-")),
                g.alt({g.literal("0"),
                       g.seq({g.byte_range('1', '9'), g.repeat(g.byte_range('0', '9'), 0, -1)})}),
                g.optional(g.seq({g.literal("."), digits})),
                g.optional(g.seq({g.alt({g.literal("e"), g.literal("E")}),
                                  g.optional(g.alt({g.literal("+"), g.literal("-")})), digits}))});
}

int32_t add_number_schema(Grammar& g, const json& schema, bool integer, const std::string& ptr) {
  const json s = numeric_bounds(schema);
  NumberConstraints c;
  c.integer = integer;
  if (s.contains("multipleOf") && s["multipleOf"].is_number()) {
    const Decimal m = decimal_at(s, "multipleOf", ptr);
    if (m.negative || m.is_zero()) schema_fail("multipleOf is not positive", ptr);
    // A multiple of 1 is any integer: nothing to add for integers.
    if (!(integer && m.whole == "1" && m.fraction.empty())) c.multiple_of = m;
  }
  if (s.contains(kExcludedKey)) {
    for (const json& v : s[kExcludedKey]) {
      if (v.is_number()) c.excluded.push_back(*decimal_of(v));
    }
  }
  if (integer && !c.multiple_of && c.excluded.empty()) return integer_range(g, s);
  for (const auto& [key, inclusive] : {std::pair{"minimum", true}, {"exclusiveMinimum", false}}) {
    if (number_at(s, key)) c.lower.push_back({decimal_at(s, key, ptr), inclusive});
  }
  for (const auto& [key, inclusive] : {std::pair{"maximum", true}, {"exclusiveMaximum", false}}) {
    if (number_at(s, key)) c.upper.push_back({decimal_at(s, key, ptr), inclusive});
  }
  if (c.lower.empty() && c.upper.empty() && !c.multiple_of && c.excluded.empty()) {
    return add_any_number(g);
  }
  try {
    return g.alt({add_number(g, c), exponent_forms(g, c)});
  } catch (const GrammarError& e) {
    schema_fail(std::string("unsupported keyword 'multipleOf': ") + e.what(), ptr);
  }
}

}  // namespace pagedllm::structured
