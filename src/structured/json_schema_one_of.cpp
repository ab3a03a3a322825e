#include "structured/json_schema_one_of.h"

#include <algorithm>
#include <optional>
#include <set>

namespace pagedllm::structured {

namespace {

using json = nlohmann::ordered_json;

std::set<std::string> value_types(const json& values) {
  std::set<std::string> out;
  for (const json& v : values) {
    if (v.is_null()) out.insert("null");
    if (v.is_boolean()) out.insert("boolean");
    if (v.is_number()) out.insert("number");
    if (v.is_string()) out.insert("string");
    if (v.is_array()) out.insert("array");
    if (v.is_object()) out.insert("object");
  }
  return out;
}

// The JSON types a schema may match ("integer" counted as "number").
std::set<std::string> types_of(const json& s) {
  static const std::set<std::string> kAll = {"null",   "boolean", "number",
                                             "string", "array",   "object"};
  if (!s.is_object()) return kAll;
  if (s.contains("const")) return value_types(json::array({s["const"]}));
  if (s.contains("enum") && s["enum"].is_array()) return value_types(s["enum"]);
  if (!s.contains("type")) {
    for (const char* k : {"properties", "required", "additionalProperties", "patternProperties"}) {
      if (s.contains(k)) return {"object"};
    }
    for (const char* k : {"items", "prefixItems", "minItems", "maxItems"}) {
      if (s.contains(k)) return {"array"};
    }
    return kAll;
  }
  std::set<std::string> out;
  const json& t = s["type"];
  for (const json& x : t.is_array() ? t : json::array({t})) {
    if (!x.is_string()) continue;
    const std::string name = x.get<std::string>();
    out.insert(name == "integer" ? "number" : name);
  }
  return out;
}

// The values a schema allows when it lists them (const or enum).
bool listed_values(const json& s, json& values) {
  if (!s.is_object()) return false;
  if (s.contains("const")) {
    values = json::array({s["const"]});
    return true;
  }
  if (s.contains("enum") && s["enum"].is_array()) {
    values = s["enum"];
    return true;
  }
  return false;
}

bool disjoint_values(const json& a, const json& b) {
  for (const json& x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) return false;
  }
  return true;
}

std::set<std::string> required_of(const json& s) {
  std::set<std::string> out;
  if (s.is_object() && s.contains("required") && s["required"].is_array()) {
    for (const json& r : s["required"]) {
      if (r.is_string()) out.insert(r.get<std::string>());
    }
  }
  return out;
}

// a's instances all have a key that b's cannot have.
bool needs_key_other_refuses(const json& a, const json& b) {
  const bool closed = b.contains("additionalProperties") &&
                      b["additionalProperties"].is_boolean() &&
                      !b["additionalProperties"].get<bool>() && !b.contains("patternProperties");
  if (!closed) return false;
  for (const std::string& r : required_of(a)) {
    if (!b.contains("properties") || !b["properties"].contains(r)) return true;
  }
  return false;
}

bool provably_disjoint(const json& a, const json& b) {
  if (a.is_boolean() || b.is_boolean())
    return (a.is_boolean() && !a.get<bool>()) || (b.is_boolean() && !b.get<bool>());
  std::set<std::string> ta = types_of(a), tb = types_of(b), both;
  std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(),
                        std::inserter(both, both.begin()));
  if (both.empty()) return true;
  json va, vb;
  if (listed_values(a, va) && listed_values(b, vb) && disjoint_values(va, vb)) return true;
  if (both != std::set<std::string>{"object"}) return false;
  // A discriminator: a property both require, with listed values that differ.
  const std::set<std::string> ra = required_of(a), rb = required_of(b);
  if (a.contains("properties") && b.contains("properties")) {
    for (const auto& [name, sa] : a["properties"].items()) {
      if (!ra.count(name) || !rb.count(name) || !b["properties"].contains(name)) continue;
      json x, y;
      if (listed_values(sa, x) && listed_values(b["properties"][name], y) &&
          disjoint_values(x, y)) {
        return true;
      }
    }
  }
  return needs_key_other_refuses(a, b) || needs_key_other_refuses(b, a);
}

bool only_required(const json& s) {
  if (!s.is_object() || !s.contains("required")) return false;
  for (const auto& [key, v] : s.items()) {
    if (key != "required" && key != "description" && key != "title" && key != "$comment") {
      return false;
    }
  }
  return true;
}

// Branches that differ only by `required`: branch i keeps its names and forbids, for each
// other branch j, the one name of j it lacks (if it lacks none, i never matches alone).
bool rewrite_required_only(const std::vector<json>& branches, std::vector<json>& out,
                           std::string& why) {
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::set<std::string> mine = required_of(branches[i]);
    std::set<std::string> forbidden;
    bool dead = false;
    for (size_t j = 0; j < branches.size() && !dead; ++j) {
      if (j == i) continue;
      std::vector<std::string> lacking;
      for (const std::string& r : required_of(branches[j])) {
        if (!mine.count(r)) lacking.push_back(r);
      }
      if (lacking.empty()) dead = true;
      if (lacking.size() > 1) {
        why = "branches " + std::to_string(i) + " and " + std::to_string(j) + " may overlap";
        return false;
      }
      if (lacking.size() == 1) forbidden.insert(lacking[0]);
    }
    if (dead) continue;
    json b = json::object();
    b["required"] = branches[i]["required"];
    b[kForbiddenKey] = json(std::vector<std::string>(forbidden.begin(), forbidden.end()));
    out.push_back(b);
  }
  return true;
}

// A property every branch declares with listed values, no value shared by two branches: the
// branches are told apart by it once it is present. An object without it may match several
// branches (then it fails oneOf) or one; requiring it leaves out only instances of the second
// kind, never lets an invalid one through.
std::optional<std::string> discriminator(const std::vector<json>& branches) {
  if (branches.size() < 2 || !branches[0].is_object() || !branches[0].contains("properties") ||
      !branches[0]["properties"].is_object()) {
    return std::nullopt;
  }
  for (const auto& [name, first] : branches[0]["properties"].items()) {
    std::vector<json> values;
    bool ok = true;
    for (const json& b : branches) {
      json v;
      ok = ok && b.is_object() && b.contains("properties") && b["properties"].is_object() &&
           b["properties"].contains(name) && listed_values(b["properties"][name], v);
      if (!ok) break;
      for (const json& other : values) ok = ok && disjoint_values(v, other);
      values.push_back(v);
    }
    if (ok) return name;
  }
  return std::nullopt;
}

std::vector<json> with_required(std::vector<json> branches, const std::string& name) {
  for (json& b : branches) {
    if (!b.contains("required") || !b["required"].is_array()) b["required"] = json::array();
    if (!required_of(b).count(name)) b["required"].push_back(name);
  }
  return branches;
}

// Whether a branch only ever matches objects as compiled: typed "object", or untyped with
// object keywords and annotations only (the compiler then reads it as an object schema).
bool object_only(const json& b) {
  static const std::set<std::string> kObject = {"properties",
                                                "required",
                                                "additionalProperties",
                                                "patternProperties",
                                                "propertyNames",
                                                "minProperties",
                                                "maxProperties",
                                                kForbiddenKey,
                                                "title",
                                                "description",
                                                "$comment",
                                                "examples",
                                                "default",
                                                "$schema",
                                                "$id",
                                                "id"};
  if (!b.is_object()) return false;
  if (b.contains("type")) return b["type"] == json("object");
  if (!b.contains("properties") && !b.contains("required")) return false;
  for (const auto& [key, v] : b.items()) {
    if (!kObject.count(key)) return false;
  }
  return true;
}

// Object branches that may overlap: branch i forbids, for each branch j it is not provably
// disjoint from, a name j requires and i does not. An object of i' then never matches j, so
// the union of the rewritten branches lies inside oneOf (objects of i carrying that name are
// left out: a name i does not declare is chosen where there is one).
bool rewrite_forbidding_names(const std::vector<json>& branches, std::vector<json>& out,
                              std::string& why) {
  if (!std::all_of(branches.begin(), branches.end(), object_only)) return false;
  out = branches;
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::set<std::string> mine = required_of(branches[i]);
    std::set<std::string> forbidden;
    for (size_t j = 0; j < branches.size(); ++j) {
      if (j == i || provably_disjoint(branches[i], branches[j])) continue;
      std::optional<std::string> pick;
      for (const std::string& r : required_of(branches[j])) {
        if (mine.count(r)) continue;
        const bool declared = branches[i].contains("properties") &&
                              branches[i]["properties"].is_object() &&
                              branches[i]["properties"].contains(r);
        if (!pick || !declared) pick = r;
        if (!declared) break;
      }
      if (!pick) {
        why = "branches " + std::to_string(i) + " and " + std::to_string(j) + " may overlap";
        return false;
      }
      forbidden.insert(*pick);
    }
    if (forbidden.empty()) continue;
    json& b = out[i];
    if (!b.contains(kForbiddenKey)) b[kForbiddenKey] = json::array();
    for (const std::string& f : forbidden) b[kForbiddenKey].push_back(f);
  }
  return true;
}

}  // namespace

bool exclusive_branches(const std::vector<json>& branches, std::vector<json>& out,
                        std::string& why) {
  out.clear();
  if (std::all_of(branches.begin(), branches.end(), only_required)) {
    return rewrite_required_only(branches, out, why);
  }
  if (auto name = discriminator(branches)) {
    out = with_required(branches, *name);
    return true;
  }
  for (size_t i = 0; i < branches.size(); ++i) {
    for (size_t j = i + 1; j < branches.size(); ++j) {
      if (!provably_disjoint(branches[i], branches[j])) {
        why = "branches " + std::to_string(i) + " and " + std::to_string(j) + " may overlap";
        return rewrite_forbidding_names(branches, out, why);
      }
    }
  }
  out = branches;
  return true;
}

}  // namespace pagedllm::structured
