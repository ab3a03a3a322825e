#include "structured/json_schema_compiler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "structured/json_schema_arrays.h"
#include "structured/json_schema_merge.h"
#include "structured/json_schema_numbers.h"
#include "structured/json_schema_one_of.h"
#include "structured/json_schema_parts.h"
#include "structured/json_schema_regular.h"
#include "structured/json_schema_rewrite.h"
#include "structured/json_schema_strings.h"
#include "structured/json_schema_validate.h"
#include "structured/regex_compiler.h"

namespace pagedllm::structured {

namespace {

using json = nlohmann::ordered_json;

// Validation keywords this compiler cannot enforce: refused by name.
const std::set<std::string> kUnsupported = {
    "contains",         "minContains", "maxContains",  "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef"};

const std::set<std::string> kObjectKeywords = {
    "properties",    "required",      "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties"};
const std::set<std::string> kArrayKeywords = {"items",    "prefixItems",     "minItems",
                                              "maxItems", "additionalItems", "uniqueItems"};
const std::set<std::string> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                               "exclusiveMaximum", "multipleOf"};

std::string escape_pointer_token(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, const JsonSchemaOptions& options)
      : root_(root), options_(options) {}

  Grammar run() {
    ws_ = whitespace();
    const int32_t value = schema(root_, "");
    g_.set_start(g_.add_rule("root", g_.seq({ws_, value, ws_})));
    return std::move(g_);
  }

  Grammar run_any_object() {
    ws_ = whitespace();
    const int32_t value = typed(json::object(), "object", "");
    g_.set_start(g_.add_rule("root", g_.seq({ws_, value, ws_})));
    return std::move(g_);
  }

 private:
  // Between tokens: nothing, one space, or a line break and an indentation of at most
  // max_whitespace spaces or tabs (as llama.cpp's grammars have it). What a pretty-printer
  // writes fits; runs of blank lines, where a weak model can spend its whole budget, do not.
  int32_t whitespace() {
    if (options_.compact) return g_.empty();
    const int32_t line_break =
        g_.seq({g_.repeat(g_.byte_range('\r', '\r'), 0, 1), g_.byte_range('\n', '\n'),
                g_.repeat(g_.alt({g_.byte_range(' ', ' '), g_.byte_range('\t', '\t')}), 0,
                          options_.max_whitespace)});
    return g_.ref(g_.add_rule("ws", g_.alt({g_.empty(), g_.byte_range(' ', ' '), line_break})));
  }

  [[noreturn]] static void fail(const std::string& what, const std::string& ptr) {
    schema_fail(what, ptr);
  }

  const json& resolve(const std::string& ref, const std::string& ptr) {
    if (ref.empty() || ref[0] != '#') fail("unsupported $ref '" + ref + "' (only local refs)", ptr);
    std::string path = ref.substr(1);
    if (!path.empty() && path[0] != '/') fail("unsupported $ref anchor '" + ref + "'", ptr);
    const json* at = &root_;
    size_t i = 1;
    while (i <= path.size() && !path.empty()) {
      size_t j = path.find('/', i);
      if (j == std::string::npos) j = path.size();
      std::string token = path.substr(i, j - i);
      std::string decoded;
      for (size_t k = 0; k < token.size(); ++k) {
        if (token[k] == '~' && k + 1 < token.size()) {
          decoded += token[k + 1] == '1' ? '/' : '~';
          ++k;
        } else if (token[k] == '%' && k + 2 < token.size() + 0 &&
                   std::isxdigit(static_cast<unsigned char>(token[k + 1])) &&
                   std::isxdigit(static_cast<unsigned char>(token[k + 2]))) {
          decoded += static_cast<char>(std::stoi(token.substr(k + 1, 2), nullptr, 16));
          k += 2;
        } else {
          decoded += token[k];
        }
      }
      if (at->is_object() && at->contains(decoded)) {
        at = &(*at)[decoded];
      } else if (at->is_array() && !decoded.empty() &&
                 decoded.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(decoded) < at->size()) {
        at = &(*at)[std::stoul(decoded)];
      } else {
        fail("$ref '" + ref + "' points nowhere", ptr);
      }
      i = j + 1;
    }
    return *at;
  }

  // A $ref becomes a rule, compiled once, so recursive schemas work.
  int32_t ref_rule(const std::string& ref, const std::string& ptr) {
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return g_.ref(it->second);
    const json& target = resolve(ref, ptr);
    const int32_t rule = g_.declare_rule("ref:" + ref);
    ref_rules_[ref] = rule;
    g_.define(rule, schema(target, ref.substr(1)));
    return g_.ref(rule);
  }

  int32_t schema(const json& s, const std::string& ptr) {
    if (++depth_ > 200) fail("schema nested too deeply", ptr);
    const int32_t out = schema_inner(s, ptr);
    --depth_;
    return out;
  }

  int32_t schema_inner(const json& s, const std::string& ptr) {
    if (s.is_boolean()) return s.get<bool>() ? any_value() : g_.nothing();
    if (!s.is_object()) fail("schema is not an object", ptr);
    if (auto listed = checked_values(s)) return *listed;
    for (const auto& [key, v] : s.items()) {
      if (kUnsupported.count(key)) fail("unsupported keyword '" + key + "'", ptr);
    }
    if (auto rewritten = rewrite_not(s, ptr)) return schema(*rewritten, ptr);
    if (auto rewritten = rewrite_if(s, ptr)) return schema(*rewritten, ptr);
    if (auto rewritten = rewrite_dependencies(s, ptr)) return schema(*rewritten, ptr);
    if (s.contains("$ref") && s["$ref"].is_string()) {
      json rest = s;
      rest.erase("$ref");
      if (!has_validation(rest)) return ref_rule(s["$ref"].get<std::string>(), ptr);
      json merged = json::object();
      merged["allOf"] = json::array({json{{"$ref", s["$ref"]}}, rest});
      return schema(merged, ptr);
    }
    if (s.contains("allOf")) return schema(merge_all_of(s, ptr), ptr);
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_array() || s[key].empty()) fail(std::string(key) + " is not a list", ptr);
      json base = s;
      base.erase(key);
      std::vector<json> branches;
      for (size_t i = 0; i < s[key].size(); ++i) {
        branches.push_back(inline_refs(s[key][i], ptr + "/" + key + "/" + std::to_string(i)));
      }
      if (std::string(key) == "oneOf") {
        std::vector<json> exclusive;
        std::string why;
        if (!exclusive_branches(branches, exclusive, why)) {
          if (auto exact = one_of_strings(base, branches, ptr)) return *exact;
          fail("unsupported keyword 'oneOf' (" + why + ")", ptr);
        }
        branches = std::move(exclusive);
      }
      std::vector<int32_t> alts;
      for (size_t i = 0; i < branches.size(); ++i) {
        const std::string sub = ptr + "/" + key + "/" + std::to_string(i);
        const bool plain = !has_validation(base) && std::string(key) == "anyOf";
        alts.push_back(schema(plain ? s[key][i] : merge_schemas(base, branches[i], sub), sub));
      }
      return g_.alt(std::move(alts));
    }
    const json excluded = s.contains(kExcludedKey) ? s[kExcludedKey] : json::array();
    // Other keywords beside the listed values filter them (a value they rule out for sure
    // is dropped); long lists are left as they are.
    json others = s;
    for (const char* key : {"enum", "const", "type"}) others.erase(key);
    const size_t listed = s.contains("enum") && s["enum"].is_array() ? s["enum"].size() : 1;
    const bool filter = listed <= 256 && has_validation(others);
    const auto allowed = [&](const json& v) {
      return value_fits_type(v, s) &&
             std::find(excluded.begin(), excluded.end(), v) == excluded.end() &&
             (!filter || validate(v, others) != Verdict::kInvalid);
    };
    if (s.contains("const")) {
      return allowed(s["const"]) ? add_json_literal(g_, s["const"], ws_) : g_.nothing();
    }
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) fail("enum is not a list", ptr);
      std::vector<int32_t> alts;
      for (const json& v : s["enum"]) {
        if (allowed(v)) alts.push_back(add_json_literal(g_, v, ws_));
      }
      return g_.alt(std::move(alts));
    }
    for (const json& v : excluded) {
      if (v.is_structured()) fail("unsupported keyword 'not' (an array or object value)", ptr);
    }
    std::vector<std::string> types = types_of(s, ptr);
    std::vector<int32_t> alts;
    for (const std::string& t : types) alts.push_back(typed(s, t, ptr));
    return g_.alt(std::move(alts));
  }

  // oneOf whose overlapping branches are all regular string schemas: exactly one of them, as an
  // automaton; the other branches must exclude strings and each other.
  std::optional<int32_t> one_of_strings(const json& base, const std::vector<json>& branches,
                                        const std::string& ptr) {
    std::vector<json> strings, others;
    try {
      for (const json& b : branches) {
        const json merged = has_validation(base) ? merge_schemas(base, b, ptr) : b;
        (exactly_one_string({merged}) ? strings : others).push_back(merged);
      }
    } catch (const GrammarError&) {
      return std::nullopt;
    }
    if (strings.size() < 2) return std::nullopt;
    std::vector<json> probe = others, unused;
    probe.push_back(json{{"type", "string"}});
    std::string why;
    if (!exclusive_branches(probe, unused, why)) return std::nullopt;
    auto exact = exactly_one_string(strings);
    if (!exact) return std::nullopt;
    std::vector<int32_t> alts = {add_string_dfa(g_, *exact)};
    for (size_t i = 0; i < others.size(); ++i) {
      alts.push_back(schema(others[i], ptr + "/oneOf"));
    }
    return g_.alt(std::move(alts));
  }

  // A schema that lists its values (enum, const): each value checked against all the other
  // keywords, whatever they are (not, oneOf, if, ...), when the check gives every value a
  // verdict; nullopt sends the schema down the keyword-by-keyword path.
  std::optional<int32_t> checked_values(const json& s) {
    const bool is_const = s.contains("const");
    if (!is_const && !(s.contains("enum") && s["enum"].is_array())) return std::nullopt;
    json rest = s;
    rest.erase(is_const ? "const" : "enum");
    const json values = is_const ? json::array({s["const"]}) : s["enum"];
    if (!has_validation(rest) || values.size() > 256) return std::nullopt;
    std::vector<int32_t> alts;
    for (const json& v : values) {
      const Verdict verdict = validate(v, rest);
      if (verdict == Verdict::kUnknown) return std::nullopt;
      if (verdict == Verdict::kValid) alts.push_back(add_json_literal(g_, v, ws_));
    }
    return g_.alt(std::move(alts));
  }

  static bool value_fits_type(const json& v, const json& s) {
    if (!s.contains("type")) return true;
    const json& t = s["type"];
    const auto fits = [&](const std::string& name) { return has_type(v, name); };
    if (t.is_string()) return fits(t.get<std::string>());
    if (t.is_array()) {
      for (const json& x : t) {
        if (x.is_string() && fits(x.get<std::string>())) return true;
      }
    }
    return false;
  }

  std::vector<std::string> types_of(const json& s, const std::string& ptr) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array()) {
        for (const json& x : t) {
          if (!x.is_string()) fail("type list has a non-string", ptr);
          types.push_back(x.get<std::string>());
        }
      } else {
        fail("type is not a string or list", ptr);
      }
      if (s.value("nullable", false)) types.push_back("null");
    } else {
      types = {"null", "boolean", "number", "string", "array", "object"};
      // Keywords of one kind alone say the type (what every real-world schema means).
      const auto uses = [&](const std::set<std::string>& keys) {
        for (const auto& [key, v] : s.items()) {
          if (keys.count(key) && !vacuous(key, v)) return true;
        }
        return false;
      };
      const bool obj = uses(kObjectKeywords), arr = uses(kArrayKeywords),
                 str = uses(kStringKeywords), num = uses(kNumberKeywords);
      if (obj + arr + str + num == 1) {
        types = {obj ? "object" : arr ? "array" : str ? "string" : "number"};
      }
    }
    for (const std::string& t : types) {
      static const std::set<std::string> kTypes = {"null",   "boolean", "integer", "number",
                                                   "string", "array",   "object"};
      if (!kTypes.count(t)) fail("unknown type '" + t + "'", ptr);
    }
    // integer inside number: number already covers it.
    if (std::count(types.begin(), types.end(), "number") &&
        std::count(types.begin(), types.end(), "integer")) {
      std::erase(types, std::string("integer"));
    }
    return types;
  }

  // A keyword that allows everything says nothing of the type: an unknown format (an
  // annotation), additionalProperties or items true, empty properties or required.
  static bool vacuous(const std::string& key, const json& v) {
    if (key == "format") return !v.is_string() || format_regex(v.get<std::string>()).empty();
    if (key == "additionalProperties" || key == "items") {
      return v == json(true) || v == json::object();
    }
    if (key == "properties" || key == "required") return v.empty();
    return false;
  }

  int32_t typed(const json& s, const std::string& type, const std::string& ptr) {
    const json none = json::array();
    const json& excluded = s.contains(kExcludedKey) ? s[kExcludedKey] : none;
    const auto kept = [&](const json& v) {
      return std::find(excluded.begin(), excluded.end(), v) == excluded.end();
    };
    if (type == "null") return kept(nullptr) ? g_.literal("null") : g_.nothing();
    if (type == "boolean") {
      std::vector<int32_t> alts;
      if (kept(true)) alts.push_back(g_.literal("true"));
      if (kept(false)) alts.push_back(g_.literal("false"));
      return g_.alt(std::move(alts));
    }
    if (type == "integer") return add_number_schema(g_, s, true, ptr);
    if (type == "number") return add_number_schema(g_, s, false, ptr);
    if (type == "string") return add_string_schema(g_, s, ptr);
    if (type == "array") return array(s, ptr);
    return object(s, ptr);
  }

  // --- arrays ---

  int32_t array(const json& s, const std::string& ptr) {
    const int64_t max_items = s.contains("maxItems") ? s["maxItems"].get<int64_t>() : -1;
    // Up to one item is always unique.
    if (s.value("uniqueItems", false) && !(max_items >= 0 && max_items <= 1)) {
      return unique_array(s, ptr);
    }
    std::vector<json> prefix;
    json items = true;
    std::string items_ptr = ptr + "/items";
    if (s.contains("prefixItems")) {
      for (const json& p : s["prefixItems"]) prefix.push_back(p);
      if (s.contains("items")) items = s["items"];
    } else if (s.contains("items") && s["items"].is_array()) {
      for (const json& p : s["items"]) prefix.push_back(p);
      if (s.contains("additionalItems")) items = s["additionalItems"];
      items_ptr = ptr + "/additionalItems";
    } else if (s.contains("items")) {
      items = s["items"];
    }
    const int64_t min = s.value("minItems", int64_t{0});
    const int64_t max = s.contains("maxItems") ? s["maxItems"].get<int64_t>() : -1;
    if (min > 10000 || max > 10000 || min < 0) fail("minItems/maxItems over 10000", ptr);
    const bool no_more = items.is_boolean() && !items.get<bool>();
    const int32_t sep = g_.seq({ws_, g_.literal(","), ws_});
    const auto k = static_cast<int64_t>(prefix.size());
    // The tail after the prefix items: more items, within the count.
    int32_t tail = g_.empty();
    if (!no_more && (max < 0 || max > k)) {
      const int32_t item = g_.ref(g_.add_rule("item", schema(items, items_ptr)));
      const auto lo = static_cast<int32_t>(std::max<int64_t>(0, min - k));
      const int32_t hi = max < 0 ? -1 : static_cast<int32_t>(max - k);
      if (k > 0) {
        tail = g_.repeat(g_.seq({sep, item}), lo, hi);
      } else {
        const int32_t rest =
            g_.repeat(g_.seq({sep, item}), std::max(lo - 1, 0), hi < 0 ? -1 : hi - 1);
        tail = g_.seq({item, rest});
        if (lo == 0) tail = g_.optional(tail);
      }
    } else if (min > k) {
      return g_.nothing();
    }
    // Prefix items from the back: item i may be left out once i >= minItems.
    int32_t body = tail;
    for (int64_t i = k - 1; i >= 0; --i) {
      if (max >= 0 && i >= max) continue;
      const int32_t item =
          schema(prefix[static_cast<size_t>(i)], ptr + "/prefixItems/" + std::to_string(i));
      int32_t here = g_.seq({i > 0 ? sep : g_.empty(), item, body});
      if (i >= min) here = g_.optional(here);
      body = here;
    }
    return g_.seq({g_.literal("["), ws_, body, ws_, g_.literal("]")});
  }

  // uniqueItems over items that are a few listed values (enum, const, boolean, null); anything
  // else cannot be enforced by a grammar.
  int32_t unique_array(const json& s, const std::string& ptr) {
    const json items = s.contains("items") ? inline_refs(s["items"], ptr + "/items") : json(true);
    std::vector<json> values;
    const bool listed =
        !s.contains("prefixItems") && items.is_object() && listed_items(items, values);
    const int64_t min = s.value("minItems", int64_t{0});
    const int64_t max = s.contains("maxItems") ? s["maxItems"].get<int64_t>() : -1;
    if (!listed || values.size() > kMaxUniqueValues) fail("unsupported keyword 'uniqueItems'", ptr);
    return add_unique_array(g_, values, min, max, ws_);
  }

  // The distinct values an item schema lists; false when it does not list them.
  static bool listed_items(const json& items, std::vector<json>& values) {
    json rest = items;
    json candidates;
    if (rest.contains("const")) {
      candidates = json::array({rest["const"]});
    } else if (rest.contains("enum") && rest["enum"].is_array()) {
      candidates = rest["enum"];
    } else if (rest.contains("type") && rest["type"] == json("boolean")) {
      candidates = json::array({true, false});
    } else if (rest.contains("type") && rest["type"] == json("null")) {
      candidates = json::array({nullptr});
    } else {
      return false;
    }
    for (const char* key : {"const", "enum", "type"}) rest.erase(key);
    if (has_validation(rest)) return false;  // other keywords would filter the values
    for (const json& v : candidates) {
      const bool seen = std::find(values.begin(), values.end(), v) != values.end();
      if (value_fits_type(v, items) && !seen) values.push_back(v);
    }
    return true;
  }

  // --- objects ---

  int32_t key_literal(const std::string& name) { return g_.literal(json(name).dump()); }

  int32_t object(const json& s, const std::string& ptr) {
    std::vector<std::pair<std::string, int32_t>> members;  // name, member expr
    std::vector<bool> required;
    std::set<std::string> required_names;
    if (s.contains("required") && s["required"].is_array()) {
      for (const json& r : s["required"]) {
        if (r.is_string()) required_names.insert(r.get<std::string>());
      }
    }
    std::vector<std::string> names;
    std::set<std::string> forbidden;
    if (s.contains(kForbiddenKey)) {
      for (const json& f : s[kForbiddenKey]) forbidden.insert(f.get<std::string>());
      names.assign(forbidden.begin(), forbidden.end());  // excluded from additional keys too
    }
    for (const std::string& r : required_names) {
      if (forbidden.count(r)) return g_.nothing();
    }
    const PatternKeys patterns = pattern_keys(s, ptr);
    json additional = options_.strict_properties ? json(false) : json(true);
    if (s.contains("additionalProperties")) additional = s["additionalProperties"];
    const bool extra_allowed = !(additional.is_boolean() && !additional.get<bool>());
    const int32_t colon = g_.seq({ws_, g_.literal(":"), ws_});
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) fail("properties is not an object", ptr);
      for (const auto& [name, sub] : s["properties"].items()) {
        if (forbidden.count(name)) continue;
        const std::string sub_ptr = ptr + "/properties/" + escape_pointer_token(name);
        names.push_back(name);
        // A declared name that a pattern matches must satisfy both schemas.
        const json value = patterns.applying_to(name, sub, json());
        members.push_back({name, g_.seq({key_literal(name), colon, schema(value, sub_ptr)})});
        required.push_back(required_names.count(name) > 0);
      }
    }
    // Required names without a property schema take what the patterns or
    // additionalProperties say.
    // In the order of the `required` list, the order a writer following the schema uses.
    for (const json& item :
         s.contains("required") && s["required"].is_array() ? s["required"] : json::array()) {
      if (!item.is_string()) continue;
      const std::string r = item.get<std::string>();
      if (std::find(names.begin(), names.end(), r) != names.end()) continue;
      const json value = patterns.applying_to(r, json(), additional);
      names.push_back(r);
      members.push_back({r, g_.seq({key_literal(r), colon, schema(value, ptr)})});
      required.push_back(true);
    }
    std::vector<int32_t> extras;
    if (!patterns.dfas.empty()) {
      extras = pattern_extras(patterns, names, additional, extra_allowed, colon, ptr);
    } else if (extra_allowed) {
      int32_t key;
      if (s.contains("propertyNames")) {
        json names_schema = s["propertyNames"];
        if (names_schema.is_object() && !names_schema.contains("type")) {
          names_schema["type"] = "string";
        }
        key = schema(names_schema, ptr + "/propertyNames");
      } else {
        key = add_key_other_than(g_, names);
      }
      extras.push_back(g_.seq({key, colon, schema(additional, ptr + "/additionalProperties")}));
    }
    const int32_t extra = extras.empty() ? -1 : g_.ref(g_.add_rule("extra", g_.alt(extras)));
    const auto [min_count, max_count] = property_counts(s, ptr);
    if (members.empty()) return counted_extras(extra, min_count, max_count);
    // Counting across optional members would need a state per count: only "at least one"
    // (the body is then not optional) and limits the declared names cannot break are kept.
    if (min_count > std::max<int64_t>(1, static_cast<int64_t>(required_names.size()))) {
      fail("unsupported keyword 'minProperties'", ptr);
    }
    if (max_count >= 0 && (extra >= 0 || static_cast<size_t>(max_count) < members.size())) {
      fail("unsupported keyword 'maxProperties'", ptr);
    }
    return object_body(members, required, extra, min_count >= 1);
  }

  // patternProperties: each pattern's key language and value schema.
  struct PatternKeys {
    std::vector<json> schemas;
    std::vector<CharDfa> dfas;
    std::vector<std::string> ptrs;

    // The schema a property named `name` must satisfy: `declared` (null: none) and every
    // matching pattern's; `otherwise` when neither applies.
    json applying_to(const std::string& name, const json& declared, const json& otherwise) const {
      json all = json::array();
      if (!declared.is_null()) all.push_back(declared);
      for (size_t i = 0; i < dfas.size(); ++i) {
        if (dfa_matches(dfas[i], name)) all.push_back(schemas[i]);
      }
      if (all.empty()) return otherwise;
      if (all.size() == 1) return all[0];
      return json{{"allOf", all}};
    }
  };

  PatternKeys pattern_keys(const json& s, const std::string& ptr) {
    PatternKeys out;
    if (!s.contains("patternProperties")) return out;
    if (!s["patternProperties"].is_object()) fail("patternProperties is not an object", ptr);
    if (s.contains("propertyNames")) {
      fail("unsupported keyword 'propertyNames' with 'patternProperties'", ptr);
    }
    for (const auto& [pattern, sub] : s["patternProperties"].items()) {
      try {
        out.dfas.push_back(dfa_from_regex(pattern, true));
      } catch (const GrammarError& e) {
        fail(std::string(e.what()) + " in a patternProperties key", ptr);
      }
      out.schemas.push_back(sub);
      out.ptrs.push_back(ptr + "/patternProperties/" + escape_pointer_token(pattern));
    }
    return out;
  }

  // Additional members under patternProperties: the keys are split into regions by the set of
  // patterns matching them (a key matching two must satisfy both schemas); keys matching none
  // take additionalProperties. Declared names are never additional.
  std::vector<int32_t> pattern_extras(const PatternKeys& patterns,
                                      const std::vector<std::string>& names, const json& additional,
                                      bool extra_allowed, int32_t colon, const std::string& ptr) {
    const CharDfa declared = dfa_of_strings(names);
    const CharDfa anything = dfa_of_length(0, -1);
    std::vector<const CharDfa*> parts;
    for (const CharDfa& d : patterns.dfas) parts.push_back(&d);
    parts.push_back(&declared);
    parts.push_back(&anything);  // keeps every key in the product
    ProductDfa p;
    try {
      p = product(parts);
    } catch (const GrammarError& e) {
      fail(std::string("unsupported keyword 'patternProperties': ") + e.what(), ptr);
    }
    const size_t n = patterns.dfas.size();
    std::map<std::vector<bool>, std::vector<bool>> regions;  // matching patterns -> states
    for (size_t st = 0; st < p.accepts.size(); ++st) {
      if (p.accepts[st][n]) continue;  // a declared name
      std::vector<bool> label(p.accepts[st].begin(), p.accepts[st].begin() + static_cast<long>(n));
      auto [it, fresh] = regions.try_emplace(label, p.accepts.size(), false);
      it->second[st] = true;
    }
    std::vector<int32_t> out;
    for (const auto& [label, accepting] : regions) {
      json all = json::array();
      std::string sub_ptr = ptr + "/additionalProperties";
      for (size_t i = 0; i < n; ++i) {
        if (!label[i]) continue;
        all.push_back(patterns.schemas[i]);
        if (all.size() == 1) sub_ptr = patterns.ptrs[i];
      }
      if (all.empty() && !extra_allowed) continue;
      const json value = all.empty() ? additional : all.size() == 1 ? all[0] : json{{"allOf", all}};
      const int32_t key = add_dfa(g_, with_accepting(p.dfa, accepting), true);
      out.push_back(
          g_.seq({g_.literal("\""), key, g_.literal("\""), colon, schema(value, sub_ptr)}));
    }
    return out;
  }

  std::pair<int64_t, int64_t> property_counts(const json& s, const std::string& ptr) {
    const int64_t min = s.contains("minProperties") ? s["minProperties"].get<int64_t>() : 0;
    const int64_t max = s.contains("maxProperties") ? s["maxProperties"].get<int64_t>() : -1;
    if (min < 0 || min > 10000 || max < -1 || max > 10000) {
      fail("minProperties/maxProperties out of range", ptr);
    }
    return {min, max};
  }

  // An object of additional members only, min..max of them (max < 0: unbounded).
  int32_t counted_extras(int32_t extra, int64_t min, int64_t max) {
    const int32_t open = g_.seq({g_.literal("{"), ws_});
    if (max >= 0 && min > max) return g_.nothing();
    if (extra < 0 || max == 0) return min > 0 ? g_.nothing() : g_.seq({open, g_.literal("}")});
    const int32_t sep = g_.seq({ws_, g_.literal(","), ws_});
    const auto lo = static_cast<int32_t>(std::max<int64_t>(min - 1, 0));
    const auto hi = static_cast<int32_t>(max < 0 ? -1 : max - 1);
    int32_t body = g_.seq({extra, g_.repeat(g_.seq({sep, extra}), lo, hi), ws_});
    if (min == 0) body = g_.optional(body);
    return g_.seq({open, body, g_.literal("}")});
  }

  // Members in schema order; optional ones may be left out, extra ones come last.
  // choice[i]: the next member written is i or a later one (those between left out);
  // later[i]: what follows once members before i are settled, one written at least. The
  // separator comes before the choice, so whitespace and commas are read by one stack.
  int32_t object_body(const std::vector<std::pair<std::string, int32_t>>& members,
                      const std::vector<bool>& required, int32_t extra, bool at_least_one) {
    const size_t n = members.size();
    const int32_t sep = g_.seq({ws_, g_.literal(","), ws_});
    int32_t later = extra < 0 ? g_.empty() : g_.repeat(g_.seq({sep, extra}), 0, -1);
    int32_t later_rule = g_.ref(g_.add_rule("later", later));
    int32_t choice = extra < 0 ? g_.nothing() : g_.seq({extra, later_rule});
    bool any_required = false;
    for (size_t i = n; i-- > 0;) {
      const int32_t with = g_.seq({members[i].second, later_rule});
      choice = required[i] ? with : g_.alt({with, g_.ref(g_.add_rule("choice", choice))});
      any_required = any_required || required[i];
      const int32_t choice_rule = g_.ref(g_.add_rule("choice", choice));
      later = g_.seq({sep, choice_rule});
      if (!any_required) later = g_.optional(later);
      later_rule = g_.ref(g_.add_rule("later", later));
      choice = choice_rule;
    }
    int32_t body = g_.seq({choice, ws_});
    if (!any_required && !at_least_one) body = g_.optional(body);
    return g_.seq({g_.literal("{"), ws_, body, g_.literal("}")});
  }

  // --- allOf ---

  json inline_refs(const json& s, const std::string& ptr) {
    if (!s.is_object() || !s.contains("$ref") || !s["$ref"].is_string()) return s;
    if (++inline_depth_ > 32) fail("$ref chain too deep in allOf", ptr);
    json target = inline_refs(resolve(s["$ref"].get<std::string>(), ptr), ptr);
    --inline_depth_;
    json rest = s;
    rest.erase("$ref");
    return has_validation(rest) ? merge_schemas(target, rest, ptr) : target;
  }

  json merge_all_of(const json& s, const std::string& ptr) {
    if (!s["allOf"].is_array()) fail("allOf is not a list", ptr);
    // An allOf reaching itself through $refs would merge forever.
    struct Depth {
      int& d;
      explicit Depth(int& depth) : d(++depth) {}
      ~Depth() { --d; }
    } depth(all_of_depth_);
    if (all_of_depth_ > 32) fail("allOf nested over 32 deep (a $ref cycle?)", ptr);
    json out = s;
    out.erase("allOf");
    for (size_t i = 0; i < s["allOf"].size(); ++i) {
      const std::string sub = ptr + "/allOf/" + std::to_string(i);
      json part = inline_refs(s["allOf"][i], sub);
      if (part.is_boolean()) {
        if (!part.get<bool>()) return json(false);
        continue;
      }
      if (part.contains("allOf")) part = merge_all_of(part, sub);
      // Conditionals of several parts cannot merge keyword by keyword; as anyOf lists they
      // merge pairwise.
      if (auto rewritten = rewrite_if(part, sub)) part = *rewritten;
      out = merge_schemas(out, part, sub);
    }
    return out;
  }

  // --- any JSON value ---

  int32_t any_value() {
    if (any_rule_ >= 0) return g_.ref(any_rule_);
    any_rule_ = g_.declare_rule("value");
    const int32_t value = g_.ref(any_rule_);
    const int32_t sep = g_.seq({ws_, g_.literal(","), ws_});
    const int32_t string = g_.seq({g_.literal("\""), g_.json_chars(0, -1), g_.literal("\"")});
    const int32_t number = add_any_number(g_);
    const int32_t array =
        g_.seq({g_.literal("["), ws_,
                g_.optional(g_.seq({value, g_.repeat(g_.seq({sep, value}), 0, -1), ws_})),
                g_.literal("]")});
    const int32_t member = g_.seq({string, ws_, g_.literal(":"), ws_, value});
    const int32_t object =
        g_.seq({g_.literal("{"), ws_,
                g_.optional(g_.seq({member, g_.repeat(g_.seq({sep, member}), 0, -1), ws_})),
                g_.literal("}")});
    g_.define(any_rule_, g_.alt({object, array, string, number, g_.literal("true"),
                                 g_.literal("false"), g_.literal("null")}));
    return value;
  }

  const json& root_;
  JsonSchemaOptions options_;
  Grammar g_;
  int32_t ws_ = -1;
  int32_t any_rule_ = -1;
  int depth_ = 0, inline_depth_ = 0, all_of_depth_ = 0;
  std::map<std::string, int32_t> ref_rules_;
};

// The deepest nesting of arrays and objects, found without recursion (the compiler and
// nlohmann's comparisons recurse, so a deep value is refused before they run).
size_t nesting_depth(const json& value) {
  size_t deepest = 0;
  std::vector<std::pair<const json*, size_t>> worklist = {{&value, 1}};
  while (!worklist.empty()) {
    auto [v, depth] = worklist.back();
    worklist.pop_back();
    deepest = std::max(deepest, depth);
    if (v->is_structured()) {
      for (const json& child : *v) worklist.push_back({&child, depth + 1});
    }
  }
  return deepest;
}

}  // namespace

Grammar grammar_from_json_schema_value(const nlohmann::ordered_json& schema,
                                       const JsonSchemaOptions& options) {
  if (nesting_depth(schema) > 256) throw GrammarError("schema nested over 256 deep");
  try {
    return SchemaCompiler(schema, options).run();
  } catch (const json::exception& e) {
    // A keyword with a value of the wrong kind (a string minLength, ...).
    throw GrammarError(std::string("schema has a keyword of the wrong type: ") + e.what());
  }
}

Grammar grammar_from_json_schema(std::string_view schema_text, const JsonSchemaOptions& options) {
  json schema;
  try {
    schema = json::parse(schema_text);
  } catch (const json::exception& e) {
    throw GrammarError(std::string("schema is not valid JSON: ") + e.what());
  }
  return grammar_from_json_schema_value(schema, options);
}

Grammar any_json_object_grammar(const JsonSchemaOptions& options) {
  return SchemaCompiler(json::object(), options).run_any_object();
}

}  // namespace pagedllm::structured
