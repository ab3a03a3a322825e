#include "structured/json_schema_merge.h"

#include <algorithm>
#include <set>

#include "structured/json_schema_one_of.h"
#include "structured/json_schema_parts.h"

namespace pagedllm::structured {

namespace {

using json = nlohmann::ordered_json;

// The keywords validators act on; two different values of any other key (an extension such as
// "markdownDescription") are annotations, and the first is kept.
const std::set<std::string> kKeywords = {"type",
                                         "enum",
                                         "const",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "patternProperties",
                                         "propertyNames",
                                         "minProperties",
                                         "maxProperties",
                                         "items",
                                         "prefixItems",
                                         "additionalItems",
                                         "minItems",
                                         "maxItems",
                                         "uniqueItems",
                                         "contains",
                                         "minContains",
                                         "maxContains",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         "multipleOf",
                                         "allOf",
                                         "anyOf",
                                         "oneOf",
                                         "not",
                                         "if",
                                         "then",
                                         "else",
                                         "dependencies",
                                         "dependentRequired",
                                         "dependentSchemas",
                                         "$ref",
                                         "unevaluatedProperties",
                                         "unevaluatedItems",
                                         "nullable",
                                         "$dynamicRef",
                                         "$recursiveRef",
                                         kForbiddenKey,
                                         kExcludedKey};

// Two anyOf lists merge into every pair of branches: past this many, the grammar would grow
// too much.
constexpr size_t kMaxAnyOfProduct = 32;

json intersect_types(const json& a, const json& b) {
  const auto list = [](const json& t) {
    std::set<std::string> out;
    if (t.is_string()) out.insert(t.get<std::string>());
    if (t.is_array()) {
      for (const json& x : t) out.insert(x.get<std::string>());
    }
    return out;
  };
  std::set<std::string> sa = list(a), sb = list(b);
  json out = json::array();
  for (const std::string& t : sa) {
    if (sb.count(t)) {
      out.push_back(t);
    } else if (t == "integer" && sb.count("number")) {
      out.push_back(t);
    } else if (t == "number" && sb.count("integer")) {
      out.push_back("integer");
    }
  }
  return out;
}

}  // namespace

bool has_validation(const json& s) {
  static const std::set<std::string> kAnnotations = {"title",
                                                     "description",
                                                     "$schema",
                                                     "$id",
                                                     "id",
                                                     "default",
                                                     "examples",
                                                     "$comment",
                                                     "readOnly",
                                                     "writeOnly",
                                                     "deprecated",
                                                     "$defs",
                                                     "definitions",
                                                     "example",
                                                     "$anchor",
                                                     "contentMediaType",
                                                     "contentEncoding"};
  for (const auto& [key, v] : s.items()) {
    // The forbidden names of the oneOf and `not` rewrites are validation, not an extension.
    if (key == kForbiddenKey || key == kExcludedKey || key == kPatternsKey) return true;
    if (!kAnnotations.count(key) && key.rfind("x-", 0) != 0) return true;
  }
  return false;
}

json merge_schemas(const json& a, const json& b, const std::string& ptr) {
  if (a.is_boolean()) return a.get<bool>() ? b : a;
  if (b.is_boolean()) return b.get<bool>() ? a : b;
  json out = a;
  for (const auto& [key, v] : b.items()) {
    if (!out.contains(key)) {
      out[key] = v;
      continue;
    }
    json& mine = out[key];
    if (mine == v) continue;
    if (key == "properties" || key == "$defs" || key == "definitions") {
      for (const auto& [name, sub] : v.items()) {
        mine[name] = mine.contains(name) ? json{{"allOf", json::array({mine[name], sub})}} : sub;
      }
    } else if (key == "required" || key == kForbiddenKey || key == kExcludedKey ||
               key == kPatternsKey) {
      for (const json& r : v) {
        if (std::find(mine.begin(), mine.end(), r) == mine.end()) mine.push_back(r);
      }
    } else if (key == "type") {
      mine = intersect_types(mine, v);
      if (mine.empty()) return json(false);  // no type both allow: nothing matches
    } else if (key == "minimum" || key == "minLength" || key == "minItems" ||
               key == "exclusiveMinimum" || key == "minProperties") {
      if (v > mine) mine = v;
    } else if (key == "maximum" || key == "maxLength" || key == "maxItems" ||
               key == "exclusiveMaximum" || key == "maxProperties") {
      if (v < mine) mine = v;
    } else if (key == "items" || key == "additionalProperties" || key == "propertyNames") {
      mine = json{{"allOf", json::array({mine, v})}};
    } else if (key == "enum") {
      json both = json::array();
      for (const json& x : mine) {
        if (std::find(v.begin(), v.end(), x) != v.end()) both.push_back(x);
      }
      mine = both;
    } else if (key == "pattern") {
      // Both must match: the string compiler intersects them.
      if (!out.contains(kPatternsKey)) out[kPatternsKey] = json::array();
      out[kPatternsKey].push_back(v);
    } else if (key == "allOf" && mine.is_array() && v.is_array()) {
      for (const json& part : v) mine.push_back(part);  // all of both lists
    } else if (key == "not") {
      // Neither a nor b: not (a or b).
      mine = json{{"anyOf", json::array({mine, v})}};
    } else if (key == "anyOf" && mine.is_array() && v.is_array() &&
               mine.size() * v.size() <= kMaxAnyOfProduct) {
      // (a1 or a2) and (b1 or b2): every pair of branches, each merged.
      json pairs = json::array();
      for (const json& x : mine) {
        for (const json& y : v) pairs.push_back(merge_schemas(x, y, ptr));
      }
      mine = pairs;
    } else if (kKeywords.count(key)) {
      schema_fail("allOf with two different '" + key + "'", ptr);
    }
  }
  return out;
}

}  // namespace pagedllm::structured
