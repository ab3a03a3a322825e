#include "spec_decode/speculative_config.h"

#include <algorithm>
#include <iterator>

#include <nlohmann/json.hpp>

namespace pagedllm {

namespace {

using json = nlohmann::json;

int int_field(const json& j, const char* name, int fallback) {
  if (!j.contains(name) || j.at(name).is_null()) return fallback;
  const json& v = j.at(name);
  if (!v.is_number_integer())
    throw ConfigError(std::string("speculative_config: ") + name + " must be an integer");
  const auto n = v.get<int64_t>();
  if (n < 0 || n > 1 << 20)
    throw ConfigError(std::string("speculative_config: ") + name + " is out of range");
  return static_cast<int>(n);
}

SpeculativeMethod method_of(const json& j) {
  std::string method = j.value("method", "");
  if (method.empty()) {
    if (j.contains("model")) {
      method = "draft_model";
    } else {
      throw ConfigError("speculative_config: give \"method\" (ngram) or \"model\"");
    }
  }
  if (method == "ngram") return SpeculativeMethod::kNgram;
  if (method == "replay") return SpeculativeMethod::kReplay;
  if (method == "draft_model") {
    if (!j.contains("model") || !j.at("model").is_string() ||
        j.at("model").get<std::string>().empty())
      throw ConfigError("speculative_config: draft_model needs \"model\": the draft's path");
    return SpeculativeMethod::kDraftModel;
  }
  if (method == "eagle" || method == "eagle3" || method == "medusa" || method == "mtp") {
    throw ConfigError("speculative_config: method '" + method +
                      "' is not supported yet; use \"ngram\" or \"draft_model\"");
  }
  throw ConfigError("speculative_config: unknown method '" + method +
                    "' (expected ngram or draft_model)");
}

}  // namespace

SpeculativeConfig parse_speculative_config(const std::string& text) {
  SpeculativeConfig c;
  if (text.empty()) return c;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError(std::string("speculative_config is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ConfigError("speculative_config must be a JSON object");
  static const char* known[] = {"method",
                                "model",
                                "num_speculative_tokens",
                                "prompt_lookup_min",
                                "prompt_lookup_max",
                                "disable_by_batch_size",
                                "adaptive"};
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      throw ConfigError("speculative_config: unknown field '" + key + "'");
  }
  c.method = method_of(j);
  if (c.method == SpeculativeMethod::kDraftModel) c.draft_model = j.at("model").get<std::string>();
  c.num_speculative_tokens = int_field(j, "num_speculative_tokens", -1);
  if (c.num_speculative_tokens < 1)
    throw ConfigError("speculative_config: num_speculative_tokens must be given, at least 1");
  c.prompt_lookup_max = int_field(j, "prompt_lookup_max", c.prompt_lookup_max);
  c.prompt_lookup_min =
      int_field(j, "prompt_lookup_min", std::min(c.prompt_lookup_min, c.prompt_lookup_max));
  c.disable_by_batch_size = int_field(j, "disable_by_batch_size", 0);
  if (j.contains("adaptive")) {
    if (!j.at("adaptive").is_boolean())
      throw ConfigError("speculative_config: adaptive must be true or false");
    c.adaptive = j.at("adaptive").get<bool>();
  }
  if (c.prompt_lookup_min < 1 || c.prompt_lookup_min > c.prompt_lookup_max)
    throw ConfigError("speculative_config: need 1 <= prompt_lookup_min <= prompt_lookup_max");
  return c;
}

std::string describe(const SpeculativeConfig& c) {
  if (!c.enabled()) return "off";
  std::string s =
      std::string(to_string(c.method)) + " k=" + std::to_string(c.num_speculative_tokens);
  if (c.method == SpeculativeMethod::kNgram)
    s += " n=" + std::to_string(c.prompt_lookup_min) + ".." + std::to_string(c.prompt_lookup_max);
  if (c.method == SpeculativeMethod::kDraftModel) s += " draft=" + c.draft_model;
  if (c.disable_by_batch_size > 0) s += " off_at_batch=" + std::to_string(c.disable_by_batch_size);
  s += c.adaptive ? " adaptive" : " fixed";
  return s;
}

}  // namespace pagedllm
