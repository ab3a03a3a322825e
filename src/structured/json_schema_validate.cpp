#include "structured/json_schema_validate.h"

#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "structured/grammar.h"
#include "structured/json_schema_merge.h"
#include "structured/json_schema_one_of.h"
#include "structured/json_schema_parts.h"
#include "structured/json_schema_regular.h"

namespace pagedllm::structured {

namespace {

using json = nlohmann::ordered_json;

// All hold: invalid if one fails, unknown if one is unknown.
class AllOf {
 public:
  void add(Verdict v) {
    if (v == Verdict::kInvalid) invalid_ = true;
    if (v == Verdict::kUnknown) unknown_ = true;
  }
  void add(bool holds) { add(holds ? Verdict::kValid : Verdict::kInvalid); }
  Verdict result() const {
    return invalid_ ? Verdict::kInvalid : unknown_ ? Verdict::kUnknown : Verdict::kValid;
  }

 private:
  bool invalid_ = false, unknown_ = false;
};

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

Verdict matches_regex(const std::string& text, const std::string& regex, bool search) {
  try {
    return dfa_matches(dfa_from_regex(regex, search), text) ? Verdict::kValid : Verdict::kInvalid;
  } catch (const GrammarError&) {
    return Verdict::kUnknown;
  }
}

Verdict multiple_of(const json& v, const json& m) {
  if (v.is_number_integer() && m.is_number_integer() && m.get<int64_t>() > 0) {
    return v.get<int64_t>() % m.get<int64_t>() == 0 ? Verdict::kValid : Verdict::kInvalid;
  }
  const double q = v.get<double>() / m.get<double>();
  // Inexact quotients are where validators disagree (0.07 / 0.01): no verdict.
  if (std::floor(q) == q) return Verdict::kValid;
  return std::fabs(q - std::round(q)) < 1e-9 ? Verdict::kUnknown : Verdict::kInvalid;
}

Verdict check(const json& v, const json& s);

Verdict check_number(const json& v, const std::string& key, const json& bound) {
  if (!bound.is_number()) return Verdict::kUnknown;
  const double x = v.get<double>(), b = bound.get<double>();
  if (key == "minimum") return x >= b ? Verdict::kValid : Verdict::kInvalid;
  if (key == "maximum") return x <= b ? Verdict::kValid : Verdict::kInvalid;
  if (key == "exclusiveMinimum") return x > b ? Verdict::kValid : Verdict::kInvalid;
  if (key == "exclusiveMaximum") return x < b ? Verdict::kValid : Verdict::kInvalid;
  return multiple_of(v, bound);
}

Verdict check_string(const std::string& text, const std::string& key, const json& k) {
  if (key == "minLength")
    return code_points(text) >= k.get<size_t>() ? Verdict::kValid : Verdict::kInvalid;
  if (key == "maxLength")
    return code_points(text) <= k.get<size_t>() ? Verdict::kValid : Verdict::kInvalid;
  if (key == "pattern") return matches_regex(text, k.get<std::string>(), true);
  // format: unknown ones are annotations; "regex" is not a regular language.
  const std::string format = k.is_string() ? k.get<std::string>() : "";
  if (format == "regex") return Verdict::kUnknown;
  const std::string regex = format_regex(format);
  return regex.empty() ? Verdict::kValid : matches_regex(text, regex, false);
}

Verdict check_array(const json& v, const std::string& key, const json& k, const json& s) {
  AllOf all;
  if (key == "minItems") return v.size() >= k.get<size_t>() ? Verdict::kValid : Verdict::kInvalid;
  if (key == "maxItems") return v.size() <= k.get<size_t>() ? Verdict::kValid : Verdict::kInvalid;
  if (key == "uniqueItems") {
    for (size_t i = 0; k == json(true) && i < v.size(); ++i) {
      for (size_t j = i + 1; j < v.size(); ++j) all.add(v[i] != v[j]);
    }
  } else if (key == "contains") {
    bool found = false, unknown = false;
    for (const json& item : v) {
      const Verdict r = check(item, k);
      found = found || r == Verdict::kValid;
      unknown = unknown || r == Verdict::kUnknown;
    }
    return found ? Verdict::kValid : unknown ? Verdict::kUnknown : Verdict::kInvalid;
  } else if (key == "prefixItems" || (key == "items" && k.is_array())) {
    for (size_t i = 0; i < v.size() && i < k.size(); ++i) all.add(check(v[i], k[i]));
  } else if (key == "items") {
    const size_t from = s.contains("prefixItems") ? s["prefixItems"].size() : 0;
    for (size_t i = from; i < v.size(); ++i) all.add(check(v[i], k));
  } else if (key == "additionalItems" && s.contains("items") && s["items"].is_array()) {
    for (size_t i = s["items"].size(); i < v.size(); ++i) all.add(check(v[i], k));
  }
  return all.result();
}

bool matches_any_pattern(const std::string& name, const json& s) {
  if (!s.contains("patternProperties")) return false;
  for (const auto& [pattern, sub] : s["patternProperties"].items()) {
    if (matches_regex(name, pattern, true) != Verdict::kInvalid) return true;
  }
  return false;
}

Verdict check_object(const json& v, const std::string& key, const json& k, const json& s) {
  AllOf all;
  if (key == "required" || key == kForbiddenKey) {
    for (const json& name : k) all.add(v.contains(name.get<std::string>()) == (key == "required"));
  } else if (key == "minProperties") {
    all.add(v.size() >= k.get<size_t>());
  } else if (key == "maxProperties") {
    all.add(v.size() <= k.get<size_t>());
  } else if (key == "properties") {
    for (const auto& [name, sub] : k.items()) {
      if (v.contains(name)) all.add(check(v[name], sub));
    }
  } else if (key == "patternProperties") {
    for (const auto& [pattern, sub] : k.items()) {
      for (const auto& [name, item] : v.items()) {
        const Verdict m = matches_regex(name, pattern, true);
        if (m == Verdict::kValid) all.add(check(item, sub));
        if (m == Verdict::kUnknown) all.add(Verdict::kUnknown);
      }
    }
  } else if (key == "additionalProperties") {
    for (const auto& [name, item] : v.items()) {
      const bool declared = s.contains("properties") && s["properties"].contains(name);
      if (!declared && !matches_any_pattern(name, s)) all.add(check(item, k));
    }
  } else if (key == "propertyNames") {
    for (const auto& [name, item] : v.items()) all.add(check(json(name), k));
  } else {
    return Verdict::kUnknown;
  }
  return all.result();
}

Verdict check_combinator(const json& v, const std::string& key, const json& k) {
  if (key == "not") {
    const Verdict r = check(v, k);
    return r == Verdict::kValid     ? Verdict::kInvalid
           : r == Verdict::kInvalid ? Verdict::kValid
                                    : Verdict::kUnknown;
  }
  if (!k.is_array()) return Verdict::kUnknown;
  size_t valid = 0, unknown = 0;
  for (const json& branch : k) {
    const Verdict r = check(v, branch);
    valid += r == Verdict::kValid;
    unknown += r == Verdict::kUnknown;
  }
  if (key == "allOf")
    return valid == k.size()             ? Verdict::kValid
           : valid + unknown == k.size() ? Verdict::kUnknown
                                         : Verdict::kInvalid;
  if (key == "anyOf")
    return valid > 0 ? Verdict::kValid : unknown > 0 ? Verdict::kUnknown : Verdict::kInvalid;
  // oneOf
  if (unknown > 0) return valid > 1 ? Verdict::kInvalid : Verdict::kUnknown;
  return valid == 1 ? Verdict::kValid : Verdict::kInvalid;
}

Verdict check_keyword(const json& v, const std::string& key, const json& k, const json& s) {
  static const std::set<std::string> kNumber = {"minimum", "maximum", "exclusiveMinimum",
                                                "exclusiveMaximum", "multipleOf"};
  static const std::set<std::string> kString = {"minLength", "maxLength", "pattern", "format"};
  static const std::set<std::string> kArray = {
      "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains"};
  static const std::set<std::string> kObject = {
      "required",      "properties",    "patternProperties", "additionalProperties",
      "propertyNames", "minProperties", "maxProperties",     kForbiddenKey};
  if (key == "type") {
    const json types = k.is_array() ? k : json::array({k});
    bool any = false;
    for (const json& t : types) any = any || (t.is_string() && has_type(v, t.get<std::string>()));
    return any ? Verdict::kValid : Verdict::kInvalid;
  }
  if (key == "enum" || key == kExcludedKey) {
    const bool listed = k.is_array() && std::find(k.begin(), k.end(), v) != k.end();
    return listed == (key == "enum") ? Verdict::kValid : Verdict::kInvalid;
  }
  if (key == "const") return v == k ? Verdict::kValid : Verdict::kInvalid;
  if (key == "if") {
    const Verdict cond = check(v, k);
    if (cond == Verdict::kUnknown) return cond;
    const char* branch = cond == Verdict::kValid ? "then" : "else";
    return s.contains(branch) ? check(v, s[branch]) : Verdict::kValid;
  }
  if (key == "then" || key == "else") return Verdict::kValid;  // with `if` only
  if (key == "dependencies" || key == "dependentRequired" || key == "dependentSchemas") {
    if (!v.is_object() || !k.is_object()) return Verdict::kValid;
    AllOf all;
    for (const auto& [name, dep] : k.items()) {
      if (!v.contains(name)) continue;
      if (!dep.is_array()) {
        all.add(check(v, dep));
        continue;
      }
      for (const json& r : dep) all.add(r.is_string() && v.contains(r.get<std::string>()));
    }
    return all.result();
  }
  if (key == "not" || key == "allOf" || key == "anyOf" || key == "oneOf") {
    return check_combinator(v, key, k);
  }
  // Draft 4's boolean exclusive bounds change minimum/maximum: no verdict there.
  if (kNumber.count(key)) {
    const bool draft4 = (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean()) ||
                        (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean());
    return !v.is_number() ? Verdict::kValid : draft4 ? Verdict::kUnknown : check_number(v, key, k);
  }
  if (key == kPatternsKey) {
    AllOf all;
    for (const json& p : k) {
      all.add(v.is_string() ? matches_regex(v.get<std::string>(), p.get<std::string>(), true)
                            : Verdict::kValid);
    }
    return all.result();
  }
  if (kString.count(key))
    return v.is_string() ? check_string(v.get<std::string>(), key, k) : Verdict::kValid;
  if (kArray.count(key)) return v.is_array() ? check_array(v, key, k, s) : Verdict::kValid;
  if (kObject.count(key)) return v.is_object() ? check_object(v, key, k, s) : Verdict::kValid;
  return has_validation(json{{key, k}}) ? Verdict::kUnknown : Verdict::kValid;
}

Verdict check(const json& v, const json& s) {
  if (s.is_boolean()) return s.get<bool>() ? Verdict::kValid : Verdict::kInvalid;
  if (!s.is_object()) return Verdict::kUnknown;
  AllOf all;
  try {
    for (const auto& [key, k] : s.items()) all.add(check_keyword(v, key, k, s));
  } catch (const json::exception&) {
    return Verdict::kUnknown;  // a keyword of the wrong type
  }
  return all.result();
}

}  // namespace

bool has_type(const nlohmann::ordered_json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  }
  if (t == "number") return v.is_number();
  if (t == "string") return v.is_string();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  return false;
}

Verdict validate(const json& value, const json& schema) {
  return check(value, schema);
}

}  // namespace pagedllm::structured
