#include "structured/json_schema_strings.h"

#include <algorithm>
#include <set>

#include "structured/json_schema_merge.h"
#include "structured/json_schema_parts.h"
#include "structured/json_schema_regular.h"
#include "structured/regex_compiler.h"

namespace pagedllm::structured {

namespace {

using json = nlohmann::ordered_json;

// Each counted character is a few automaton states: past this the grammar is too large.
constexpr int32_t kMaxLength = 40000;

// What a string schema asks for; an absent constraint is empty (max_length -1).
struct StringConstraints {
  int32_t min_length = 0, max_length = -1;
  std::string pattern;  // searched: matches anywhere unless anchored
  std::string format;   // the format's regex, matched in full
  bool has_pattern = false;
  std::vector<std::string> excluded;       // values it must not be (`not` with enum or const)
  std::vector<std::string> more_patterns;  // from allOf parts with other patterns

  bool has_length() const { return min_length > 0 || max_length >= 0; }
  int count() const {
    return has_length() + has_pattern + !format.empty() +
           (excluded.empty() && more_patterns.empty() ? 0 : 2);
  }
};

StringConstraints constraints_of(const json& s, const std::string& ptr) {
  StringConstraints c;
  if (s.contains("minLength")) c.min_length = s["minLength"].get<int32_t>();
  if (s.contains("maxLength")) c.max_length = s["maxLength"].get<int32_t>();
  if (c.min_length < 0 || c.max_length < -1 || c.min_length > kMaxLength ||
      c.max_length > kMaxLength) {
    schema_fail("length out of range", ptr);
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) schema_fail("pattern is not a string", ptr);
    c.pattern = s["pattern"].get<std::string>();
    c.has_pattern = true;
  }
  // A format outside the list is an annotation, as validators treat unknown formats.
  if (s.contains("format") && s["format"].is_string()) {
    const std::string format = s["format"].get<std::string>();
    // Validators check that a "regex" string compiles: not a regular language.
    if (format == "regex") schema_fail("unsupported keyword 'format' ('regex')", ptr);
    c.format = format_regex(format);
  }
  if (s.contains(kExcludedKey)) {
    for (const json& v : s[kExcludedKey]) {
      if (v.is_string()) c.excluded.push_back(v.get<std::string>());
    }
  }
  if (s.contains(kPatternsKey)) {
    for (const json& v : s[kPatternsKey]) c.more_patterns.push_back(v.get<std::string>());
  }
  return c;
}

// Two or more constraints: the product of their automata.
int32_t intersected(Grammar& g, const StringConstraints& c, const std::string& ptr) {
  CharDfa dfa;
  try {
    dfa = c.has_pattern       ? dfa_from_regex(c.pattern, true)
          : !c.format.empty() ? dfa_from_regex(c.format, false)
                              : dfa_of_length(0, -1);
    if (c.has_pattern && !c.format.empty()) dfa = intersect(dfa, dfa_from_regex(c.format, false));
    if (!c.excluded.empty()) dfa = intersect(dfa, complement(dfa_of_strings(c.excluded)));
    for (const std::string& p : c.more_patterns) dfa = intersect(dfa, dfa_from_regex(p, true));
    // A length the pattern already implies (^\d{5}$ with maxLength 255) needs no counting.
    const auto [shortest, longest] = length_range(dfa);
    const bool implied =
        shortest >= c.min_length && (c.max_length < 0 || (longest >= 0 && longest <= c.max_length));
    if (c.has_length() && !implied) {
      dfa = intersect(dfa, dfa_of_length(c.min_length, c.max_length));
    }
  } catch (const GrammarError& e) {
    const std::string what = e.what();
    if (what.rfind("regex:", 0) == 0) schema_fail(what + " in 'pattern'", ptr);
    schema_fail(std::string("unsupported keyword '") +
                    (c.has_length() ? "maxLength/minLength" : "format") + "' with '" +
                    (c.has_pattern       ? "pattern"
                     : !c.format.empty() ? "format"
                                         : "not") +
                    "': " + what,
                ptr);
  }
  return add_dfa(g, dfa, true);
}

// The values a string-only regular schema allows, or nullopt.
std::optional<CharDfa> string_language(const json& s) {
  static const std::set<std::string> kAllowed = {
      "type",  "pattern",  "format",      "minLength", "maxLength", "enum",   "const",
      "title", "$comment", "description", "examples",  "default",   "$schema"};
  if (!s.is_object()) return std::nullopt;
  for (const auto& [key, v] : s.items()) {
    if (!kAllowed.count(key)) return std::nullopt;
  }
  if (s.contains("type") && s["type"] != json("string")) return std::nullopt;
  try {
    const StringConstraints c = constraints_of(s, "");
    CharDfa dfa = dfa_of_length(c.min_length, c.max_length);
    if (c.has_pattern) dfa = intersect(dfa, dfa_from_regex(c.pattern, true));
    if (!c.format.empty()) dfa = intersect(dfa, dfa_from_regex(c.format, false));
    for (const char* key : {"enum", "const"}) {
      if (!s.contains(key)) continue;
      const json values = std::string(key) == "const" ? json::array({s[key]}) : s[key];
      std::vector<std::string> strings;
      for (const json& v : values) {
        if (!v.is_string()) return std::nullopt;  // other types: not a string schema
        strings.push_back(v.get<std::string>());
      }
      dfa = intersect(dfa, dfa_of_strings(strings));
    }
    return dfa;
  } catch (const GrammarError&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<CharDfa> exactly_one_string(const std::vector<json>& branches) {
  std::vector<CharDfa> languages;
  for (const json& b : branches) {
    auto dfa = string_language(b);
    if (!dfa) return std::nullopt;
    languages.push_back(std::move(*dfa));
  }
  std::vector<const CharDfa*> parts;
  for (const CharDfa& d : languages) parts.push_back(&d);
  try {
    const ProductDfa p = product(parts);
    std::vector<bool> one;
    for (const std::vector<bool>& acc : p.accepts) {
      one.push_back(std::count(acc.begin(), acc.end(), true) == 1);
    }
    return with_accepting(p.dfa, one);
  } catch (const GrammarError&) {
    return std::nullopt;
  }
}

int32_t add_string_dfa(Grammar& g, const CharDfa& dfa) {
  return g.seq({g.literal("\""), add_dfa(g, dfa, true), g.literal("\"")});
}

int32_t add_string_schema(Grammar& g, const json& s, const std::string& ptr) {
  const StringConstraints c = constraints_of(s, ptr);
  const int32_t quote = g.literal("\"");
  int32_t body;
  if (c.count() > 1) {
    body = intersected(g, c, ptr);
  } else if (c.has_pattern) {
    try {
      body = add_regex(g, c.pattern, {.json_string = true, .search = true});
    } catch (const GrammarError& e) {
      schema_fail(std::string(e.what()) + " in 'pattern'", ptr);
    }
  } else if (!c.format.empty()) {
    body = add_regex(g, c.format, {.json_string = true, .search = false});
  } else {
    body = g.json_chars(c.min_length, c.max_length);
  }
  return g.seq({quote, body, quote});
}

}  // namespace pagedllm::structured
