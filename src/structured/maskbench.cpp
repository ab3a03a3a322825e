#include "structured/maskbench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <numeric>
#include <regex>

#include "structured/compiled_grammar.h"
#include "structured/json_schema_compiler.h"
#include "structured/matcher.h"
#include "tokenizer/tokenizer.h"

namespace pagedllm::structured {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const auto i = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// A local $ref's target (one level of indirection at a time), or the schema itself.
const json& follow_ref(const json& schema, const json& root) {
  const json* at = &schema;
  for (int hops = 0;
       hops < 16 && at->is_object() && at->contains("$ref") && (*at)["$ref"].is_string(); ++hops) {
    const std::string ref = (*at)["$ref"].get<std::string>();
    if (ref.rfind("#", 0) != 0) break;
    try {
      at = &root.at(json::json_pointer(ref.substr(1)));
    } catch (const std::exception&) {
      break;
    }
  }
  return *at;
}

// The schema a key outside "properties" takes: the first patternProperties regex that finds
// the key (the grammar gives such a key that schema too), else additionalProperties.
json schema_of_other_key(const json& schema, const std::string& key) {
  if (schema.contains("patternProperties") && schema["patternProperties"].is_object()) {
    for (const auto& [pattern, sub] : schema["patternProperties"].items()) {
      try {
        if (std::regex_search(key, std::regex(pattern, std::regex::ECMAScript))) return sub;
      } catch (const std::regex_error&) {
      }
    }
  }
  return schema.contains("additionalProperties") ? schema["additionalProperties"] : json(true);
}

// allOf as the compiler merges it: the schema's own properties, then each part's in order.
json merged_all_of(const json& schema, const json& root) {
  json merged = schema;
  merged.erase("allOf");
  json props = schema.contains("properties") && schema["properties"].is_object()
                   ? schema["properties"]
                   : json::object();
  for (const json& part_in : schema["allOf"]) {
    const json& part = follow_ref(part_in, root);
    if (!part.is_object()) continue;
    if (part.contains("properties") && part["properties"].is_object()) {
      for (const auto& [k, v] : part["properties"].items()) {
        if (!props.contains(k)) props[k] = v;
      }
    }
    for (const char* key : {"additionalProperties", "patternProperties", "items", "prefixItems"}) {
      if (part.contains(key) && !merged.contains(key)) merged[key] = part[key];
    }
  }
  if (!props.empty()) merged["properties"] = props;
  return merged;
}

// The anyOf/oneOf branch that fits the instance best: for an object the one that declares most
// of its keys, for an array the first that describes arrays.
const json* best_branch(const json& branches, const json& data, const json& root) {
  const json* best = nullptr;
  size_t best_hits = 0;
  for (const json& branch_in : branches) {
    const json& branch = follow_ref(branch_in, root);
    if (!branch.is_object()) continue;
    if (data.is_array()) {
      if (branch.contains("items") || branch.contains("prefixItems")) return &branch;
      continue;
    }
    if (!branch.contains("properties")) continue;
    size_t hits = 0;
    for (const auto& [k, v] : data.items()) hits += branch["properties"].contains(k);
    if (hits > best_hits) best = &branch, best_hits = hits;
  }
  return best;
}

}  // namespace

// Writes an instance's keys in the schema's property order (then the others, as they were):
// the order a decoder constrained by the schema writes them in.
json in_schema_order(const json& data, const json& schema_in, const json& root, int depth) {
  if (depth > 64) return data;
  const json& schema = follow_ref(schema_in, root);
  if (!schema.is_object() || !(data.is_object() || data.is_array())) return data;
  if (schema.contains("allOf") && schema["allOf"].is_array()) {
    return in_schema_order(data, merged_all_of(schema, root), root, depth + 1);
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!schema.contains(key) || !schema[key].is_array()) continue;
    if (data.is_object() && schema.contains("properties")) continue;
    if (data.is_array() && (schema.contains("items") || schema.contains("prefixItems"))) continue;
    if (const json* best = best_branch(schema[key], data, root)) {
      return in_schema_order(data, *best, root, depth + 1);
    }
  }
  if (data.is_object()) {
    json out = json::object();
    const json props = schema.contains("properties") && schema["properties"].is_object()
                           ? schema["properties"]
                           : json::object();
    for (const auto& [k, sub] : props.items()) {
      if (data.contains(k)) out[k] = in_schema_order(data[k], sub, root, depth + 1);
    }
    for (const auto& [k, v] : data.items()) {
      if (!props.contains(k))
        out[k] = in_schema_order(v, schema_of_other_key(schema, k), root, depth + 1);
    }
    return out;
  }
  json out = json::array();
  for (size_t i = 0; i < data.size(); ++i) {
    json sub = true;
    if (schema.contains("prefixItems") && i < schema["prefixItems"].size()) {
      sub = schema["prefixItems"][i];
    } else if (schema.contains("items") && schema["items"].is_array()) {
      sub = i < schema["items"].size() ? schema["items"][i] : json(true);
    } else if (schema.contains("items")) {
      sub = schema["items"];
    }
    out.push_back(in_schema_order(data[i], sub, root, depth + 1));
  }
  return out;
}

namespace {

// Walks one text's tokens; true when every token was allowed and the end is allowed.
bool accepted(const std::shared_ptr<const TokenGrammar>& grammar,
              const std::vector<int32_t>& tokens, std::vector<uint32_t>& mask,
              MaskBenchTally& tally, const std::string& name) {
  GrammarMatcher matcher(grammar);
  const auto allowed = [&](int32_t id) {
    return (mask[static_cast<size_t>(id) / 32] >> (static_cast<uint32_t>(id) % 32)) & 1u;
  };
  for (int32_t token : tokens) {
    const auto t = Clock::now();
    matcher.fill_next_token_bitmask(mask.data());
    tally.mask_us.push_back(micros_since(t));
    if (tally.mask_us.back() > MaskBenchTally::kSlowMaskUs) {
      tally.problems.push_back(name + ": slow mask, " +
                               std::to_string(static_cast<int>(tally.mask_us.back())) +
                               " us after " + std::to_string(matcher.num_accepted()) + " tokens");
    }
    if (!allowed(token)) return false;
    if (!matcher.accept_token(token)) throw std::logic_error("mask and accept disagree");
  }
  const auto t = Clock::now();
  matcher.fill_next_token_bitmask(mask.data());
  tally.mask_us.push_back(micros_since(t));
  const std::vector<int32_t>& stops = grammar->vocab().stop_tokens();
  return !stops.empty() && allowed(stops[0]);
}

}  // namespace

// One schema file: compile, then every test instance, compact and indented.
void run_maskbench_file(const std::filesystem::path& path, const Tokenizer& tokenizer,
                        const std::shared_ptr<const TokenVocabulary>& vocab,
                        MaskBenchTally& tally) {
  json file;
  try {
    std::ifstream in(path);
    file = json::parse(in);
  } catch (const std::exception& e) {
    std::cerr << path.filename().string() << ": not JSON: " << e.what() << "\n";
    return;
  }
  ++tally.schemas;
  const std::string name = path.filename().string();
  const json& tests = file.contains("tests") ? file["tests"] : json::array();
  std::shared_ptr<const CompiledGrammar> compiled;
  const auto t = Clock::now();
  try {
    compiled = compile_grammar(grammar_from_json_schema_value(file["schema"], {}));
  } catch (const GrammarError& e) {
    const bool limit = std::string(e.what()).find("compile limit") != std::string::npos;
    ++(limit ? tally.timeouts : tally.compile_errors);
    tally.problems.push_back(name + ": " + e.what());
    return;
  } catch (const std::exception& e) {
    ++tally.crashes;
    tally.problems.push_back(name + ": crash: " + e.what());
    return;
  }
  tally.compile_us.push_back(micros_since(t));
  const auto grammar = std::make_shared<const TokenGrammar>(compiled, vocab);
  std::vector<uint32_t> mask(vocab->mask_words());
  bool all_right = true;
  try {
    for (size_t i = 0; i < tests.size(); ++i) {
      const json& test = tests[i];
      const bool valid = test.value("valid", false);
      ++(valid ? tally.valid_instances : tally.invalid_instances);
      const json data = in_schema_order(test["data"], file["schema"], file["schema"]);
      bool any_accepted = false, all_accepted = true;
      for (int indent : {-1, 2}) {
        const std::vector<int32_t> tokens = tokenizer.encode(data.dump(indent), false, false);
        const bool ok = accepted(grammar, tokens, mask, tally, name);
        any_accepted = any_accepted || ok;
        all_accepted = all_accepted && ok;
      }
      if (valid && !all_accepted) {
        ++tally.valid_rejected;
        all_right = false;
        tally.problems.push_back(name + ": valid test " + std::to_string(i) + " rejected");
      }
      if (!valid && any_accepted) {
        ++tally.invalid_accepted;
        all_right = false;
        tally.problems.push_back(name + ": invalid test " + std::to_string(i) + " accepted");
      }
    }
  } catch (const std::exception& e) {
    ++tally.crashes;
    tally.problems.push_back(name + ": crash: " + e.what());
    return;
  }
  tally.passing += all_right;
}

json maskbench_report(MaskBenchTally& t) {
  std::sort(t.mask_us.begin(), t.mask_us.end());
  std::sort(t.compile_us.begin(), t.compile_us.end());
  const double mean = t.mask_us.empty() ? 0.0
                                        : std::accumulate(t.mask_us.begin(), t.mask_us.end(), 0.0) /
                                              static_cast<double>(t.mask_us.size());
  json out;
  out["schemas"] = t.schemas;
  out["passing"] = t.passing;
  out["compile_errors"] = t.compile_errors;
  out["crashes"] = t.crashes;
  out["timeouts"] = t.timeouts;
  out["valid_rejected"] = t.valid_rejected;
  out["invalid_accepted"] = t.invalid_accepted;
  out["valid_instances"] = t.valid_instances;
  out["invalid_instances"] = t.invalid_instances;
  out["mask_us"] = {{"mean", mean},
                    {"p50", percentile(t.mask_us, 50)},
                    {"p90", percentile(t.mask_us, 90)},
                    {"p99", percentile(t.mask_us, 99)},
                    {"p999", percentile(t.mask_us, 99.9)},
                    {"max", t.mask_us.empty() ? 0.0 : t.mask_us.back()}};
  out["compile_us"] = {{"p50", percentile(t.compile_us, 50)},
                       {"p75", percentile(t.compile_us, 75)},
                       {"p90", percentile(t.compile_us, 90)},
                       {"p99", percentile(t.compile_us, 99)}};
  return out;
}

}  // namespace pagedllm::structured
