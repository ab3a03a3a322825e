#include "structured/json_schema_rewrite.h"

#include <algorithm>
#include <set>

#include "structured/json_schema_merge.h"
#include "structured/json_schema_one_of.h"
#include "structured/json_schema_parts.h"
#include "structured/json_schema_validate.h"

namespace pagedllm::structured {

namespace {

using json = nlohmann::ordered_json;

const char* const kDependencyKeys[] = {"dependencies", "dependentRequired", "dependentSchemas"};

bool is_required(const json& s, const std::string& name) {
  if (!s.contains("required") || !s["required"].is_array()) return false;
  const json& r = s["required"];
  return std::find(r.begin(), r.end(), json(name)) != r.end();
}

// Whether an object of `s` can never have the property (declared nowhere, no other keys).
bool cannot_have(const json& s, const std::string& name) {
  if (s.contains("properties") && s["properties"].is_object() && s["properties"].contains(name)) {
    return false;
  }
  if (s.contains("patternProperties")) return false;
  return s.contains("additionalProperties") && s["additionalProperties"] == json(false);
}

size_t count_dependencies(const json& s) {
  size_t n = 0;
  for (const char* key : kDependencyKeys) {
    if (s.contains(key) && s[key].is_object()) n += s[key].size();
  }
  return n;
}

// What the property brings when present: a list of required names or a schema.
json brought(const json& dependency, const std::string& name, const std::string& ptr) {
  json present = json{{"required", json::array({name})}};
  if (dependency.is_array()) {
    for (const json& r : dependency) present["required"].push_back(r);
    return present;
  }
  if (dependency.is_boolean() || dependency.is_object()) {
    return merge_schemas(present, dependency, ptr);
  }
  schema_fail("a dependency is neither a list nor a schema", ptr);
}

// The names of a `required`-only schema (annotations aside), or nothing.
std::optional<std::vector<std::string>> required_only(const json& s) {
  if (!s.is_object() || !s.contains("required") || !s["required"].is_array()) return std::nullopt;
  json rest = s;
  rest.erase("required");
  if (has_validation(rest)) return std::nullopt;
  std::vector<std::string> names;
  for (const json& r : s["required"]) {
    if (!r.is_string()) return std::nullopt;
    names.push_back(r.get<std::string>());
  }
  return names;
}

json forbidding(const std::string& name) {
  return json{{kForbiddenKey, json::array({name})}};
}

// An object without the property: what not {"required": [name]} leaves (anything that is not
// an object satisfies "required", so fails its negation).
json object_without(const std::string& name) {
  return json{{"type", "object"}, {kForbiddenKey, json::array({name})}};
}

// not {"type": T}: the other types.
json without_types(const json& s, const json& not_type, const std::string& ptr) {
  static const std::vector<std::string> kAll = {"null",   "boolean", "integer", "number",
                                                "string", "array",   "object"};
  std::set<std::string> excluded;
  if (not_type.is_string()) excluded.insert(not_type.get<std::string>());
  if (not_type.is_array()) {
    for (const json& t : not_type) excluded.insert(t.get<std::string>());
  }
  // Without "number" an integer is still a number; not {"type": "integer"} leaves fractions,
  // which a type list cannot say.
  if (excluded.count("integer") && !excluded.count("number")) {
    schema_fail("unsupported keyword 'not' (of type integer alone)", ptr);
  }
  if (excluded.count("number")) excluded.insert("integer");
  json types = json::array();
  std::vector<std::string> have = kAll;
  if (s.contains("type")) {
    have.clear();
    if (s["type"].is_string()) have.push_back(s["type"].get<std::string>());
    if (s["type"].is_array()) {
      for (const json& t : s["type"]) have.push_back(t.get<std::string>());
    }
  }
  for (const std::string& t : have) {
    if (!excluded.count(t)) types.push_back(t);
  }
  if (types.empty()) return json(false);
  json out = s;
  out["type"] = types;
  return out;
}

// The property and values an `if` of the supported form tests; false otherwise.
bool property_test(const json& cond, std::string& name, json& values, bool& required) {
  if (!cond.is_object() || !cond.contains("properties") || !cond["properties"].is_object() ||
      cond["properties"].size() != 1) {
    return false;
  }
  json rest = cond;
  rest.erase("properties");
  required = false;
  if (rest.contains("required")) {
    if (!rest["required"].is_array() || rest["required"].size() > 1) return false;
    required = rest["required"].size() == 1;
    rest.erase("required");
  }
  if (has_validation(rest)) return false;
  name = cond["properties"].begin().key();
  if (required && cond["required"][0] != json(name)) return false;
  json test = cond["properties"].begin().value();
  if (!test.is_object()) return false;
  if (test.contains("const")) {
    values = json::array({test["const"]});
    test.erase("const");
  } else if (test.contains("enum") && test["enum"].is_array()) {
    values = test["enum"];
    test.erase("enum");
  } else {
    return false;
  }
  test.erase("type");  // the listed values say it
  return !has_validation(test) && std::none_of(values.begin(), values.end(),
                                               [](const json& v) { return v.is_structured(); });
}

// A schema listing its values, with `not`: the values `n` holds for are dropped, each checked
// on its own.
json listed_not(const json& rest, const json& n, const std::string& ptr) {
  json out = rest;
  const bool is_const = rest.contains("const");
  const json values = is_const ? json::array({rest["const"]}) : rest["enum"];
  if (!values.is_array()) schema_fail("enum is not a list", ptr);
  json kept = json::array();
  for (const json& v : values) {
    const Verdict verdict = validate(v, n);
    if (verdict == Verdict::kUnknown) schema_fail("unsupported keyword 'not'", ptr);
    if (verdict == Verdict::kInvalid) kept.push_back(v);
  }
  if (is_const) return kept.empty() ? json(false) : out;
  out["enum"] = kept;
  return out;
}

}  // namespace

std::optional<json> rewrite_if(const json& s, const std::string& ptr) {
  if (!s.is_object() || !s.contains("if")) return std::nullopt;
  json rest = s;
  for (const char* key : {"if", "then", "else"}) rest.erase(key);
  const json then = s.contains("then") ? s["then"] : json(true);
  const json otherwise = s.contains("else") ? s["else"] : json(true);
  std::string name;
  json values;
  bool required = false;
  if (!property_test(s["if"], name, values, required)) {
    schema_fail("unsupported keyword 'if'", ptr);
  }
  const std::string sub = ptr + "/if";
  // As allOf, merged by the compiler once $refs are inlined: the schema's own properties keep
  // coming first, before those a $ref in then/else brings.
  const auto with = [&](const json& branch, const json& extra) {
    return json{{"allOf", json::array({rest, branch, extra})}};
  };
  // Anything but an object passes `if` (properties and required only look at objects).
  const json not_object = {{"type", json::array({"null", "boolean", "number", "string", "array"})}};
  const json absent = {{"type", "object"}, {kForbiddenKey, json::array({name})}};
  const json one_of_them = {{"type", "object"},
                            {"properties", {{name, {{"enum", values}}}}},
                            {"required", json::array({name})}};
  const json another = {{"type", "object"},
                        {"properties", {{name, {{"not", {{"enum", values}}}}}}},
                        {"required", json::array({name})}};
  json branches =
      json::array({with(then, not_object), with(then, one_of_them),
                   with(required ? otherwise : then, absent), with(otherwise, another)});
  return json{{"anyOf", branches}};
}

std::optional<json> rewrite_dependencies(const json& s, const std::string& ptr) {
  if (!s.is_object()) return std::nullopt;
  const size_t n = count_dependencies(s);
  if (n == 0) return std::nullopt;
  for (const char* key : kDependencyKeys) {
    if (!s.contains(key)) continue;
    if (!s[key].is_object()) schema_fail(std::string(key) + " is not an object", ptr);
    if (s[key].empty()) {
      json rest = s;
      rest.erase(key);
      return rest;
    }
    const std::string sub = ptr + "/" + key;
    if (n > kMaxDependencies) {
      schema_fail("unsupported keyword '" + std::string(key) + "' (over " +
                      std::to_string(kMaxDependencies) + " dependencies)",
                  ptr);
    }
    const auto first = s[key].begin();
    const std::string name = first.key();
    const json present = brought(first.value(), name, sub);
    json rest = s;
    rest[key].erase(name);
    if (rest[key].empty()) rest.erase(key);
    if (is_required(rest, name)) return merge_schemas(rest, present, sub);
    if (cannot_have(rest, name)) return rest;
    json absent = merge_schemas(rest, forbidding(name), sub);
    return json{{"anyOf", json::array({absent, merge_schemas(rest, present, sub)})}};
  }
  return std::nullopt;
}

std::optional<json> rewrite_not(const json& s, const std::string& ptr) {
  if (!s.is_object() || !s.contains("not")) return std::nullopt;
  const json& n = s["not"];
  json rest = s;
  rest.erase("not");
  const std::string sub = ptr + "/not";
  if (n.is_boolean()) return n.get<bool>() ? json(false) : rest;
  if (!n.is_object()) schema_fail("not is not a schema", ptr);
  if (!has_validation(n)) return json(false);  // not {} matches nothing
  if (rest.contains("enum") || rest.contains("const")) return listed_not(rest, n, ptr);
  if (auto names = required_only(n)) {
    // Not all of them: one at least is absent.
    json branches = json::array();
    for (const std::string& name : *names) {
      branches.push_back(merge_schemas(rest, object_without(name), sub));
    }
    if (branches.size() == 1) return branches[0];
    return json{{"anyOf", branches}};
  }
  if (n.contains("anyOf") && n.size() == 1 && n["anyOf"].is_array()) {
    // Not any of them: not the first, and not the second, ... (each rewritten in turn).
    json out = rest;
    for (const json& branch : n["anyOf"]) {
      if (out.is_boolean()) break;
      json with = out;
      if (with.contains("not")) schema_fail("unsupported keyword 'not'", ptr);
      with["not"] = branch;
      out = *rewrite_not(with, ptr);
    }
    return out;
  }
  json values = n;
  for (const char* annotation : {"title", "description", "$comment"}) values.erase(annotation);
  if (values.size() == 1 &&
      (values.contains("const") || (values.contains("enum") && values["enum"].is_array()))) {
    // Not one of these values: the compiler leaves them out of each type's language.
    json excluded = values.contains("const") ? json::array({values["const"]}) : values["enum"];
    return merge_schemas(rest, json{{kExcludedKey, excluded}}, sub);
  }
  json only_type = n;
  for (const char* annotation : {"title", "description", "$comment"}) only_type.erase(annotation);
  if (only_type.size() == 1 && only_type.contains("type")) {
    return without_types(rest, only_type["type"], ptr);
  }
  schema_fail("unsupported keyword 'not'", ptr);
}

}  // namespace pagedllm::structured
