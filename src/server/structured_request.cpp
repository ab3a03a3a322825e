#include "server/structured_request.h"

#include "server/api_error.h"

namespace pagedllm::server {

namespace {

using json = nlohmann::ordered_json;

const json* field(const json& body, const std::string& name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::string string_field(const json& v, const std::string& param) {
  if (!v.is_string()) throw bad_request(param + " must be a string", param);
  return v.get<std::string>();
}

std::vector<std::string> choice_list(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty())
    throw bad_request(param + " must be a non-empty array of strings", param);
  std::vector<std::string> choices;
  for (const json& c : v) {
    if (!c.is_string()) throw bad_request(param + " must be a non-empty array of strings", param);
    choices.push_back(c.get<std::string>());
  }
  return choices;
}

std::optional<StructuredOutputs> from_response_format(const json& v) {
  const std::string param = "response_format";
  if (!v.is_object() || !v.contains("type") || !v["type"].is_string())
    throw bad_request("response_format must be an object with a string type", param);
  const std::string type = v["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  StructuredOutputs s;
  if (type == "json_object") {
    s.json_object = true;
    return s;
  }
  if (type != "json_schema") {
    throw bad_request(
        "response_format type must be text, json_object or json_schema, got '" + type + "'", param);
  }
  const json* spec = field(v, "json_schema");
  if (!spec || !spec->is_object())
    throw bad_request("response_format json_schema needs a json_schema object", param);
  if (const json* name = field(*spec, "name"); name && !name->is_string())
    throw bad_request("response_format json_schema name must be a string", param);
  const json* schema = field(*spec, "schema");
  // OpenAI allows the schema to be left out: any JSON object then.
  if (!schema) {
    s.json_object = true;
    return s;
  }
  s.json = schema_text(*schema, param);
  // Strict, as OpenAI means it: no properties beyond the declared ones unless the schema allows
  // them.
  if (const json* strict = field(*spec, "strict"); strict && strict->is_boolean())
    s.disable_additional_properties = strict->get<bool>();
  return s;
}

StructuredOutputs from_structured_outputs(const json& v) {
  const std::string param = "structured_outputs";
  if (!v.is_object()) throw bad_request("structured_outputs must be an object", param);
  StructuredOutputs s;
  if (const json* j = field(v, "json")) s.json = schema_text(*j, param + ".json");
  if (const json* r = field(v, "regex")) s.regex = string_field(*r, param + ".regex");
  if (const json* c = field(v, "choice")) s.choice = choice_list(*c, param + ".choice");
  if (const json* g = field(v, "grammar")) s.grammar = string_field(*g, param + ".grammar");
  if (const json* o = field(v, "json_object")) {
    if (!o->is_boolean()) throw bad_request(param + ".json_object must be a boolean", param);
    s.json_object = o->get<bool>();
  }
  for (const char* flag : {"disable_any_whitespace", "disable_additional_properties"}) {
    const json* f = field(v, flag);
    if (f && !f->is_boolean()) throw bad_request(param + "." + flag + " must be a boolean", param);
  }
  if (const json* f = field(v, "disable_any_whitespace")) s.disable_any_whitespace = f->get<bool>();
  if (const json* f = field(v, "disable_additional_properties"))
    s.disable_additional_properties = f->get<bool>();
  for (const char* unsupported : {"whitespace_pattern", "structural_tag"}) {
    if (field(v, unsupported))
      throw bad_request(param + "." + unsupported + " is not supported", param);
  }
  const int kinds = s.json.has_value() + s.regex.has_value() + s.choice.has_value() +
                    s.grammar.has_value() + s.json_object;
  if (kinds != 1) {
    throw bad_request(
        "structured_outputs needs exactly one of json, regex, choice, grammar or json_object",
        param);
  }
  return s;
}

// vLLM's older guided_* fields: one of them, each meaning what its structured_outputs key does.
std::optional<std::pair<StructuredOutputs, std::string>> from_guided_fields(const json& body) {
  std::optional<std::pair<StructuredOutputs, std::string>> found;
  auto take = [&](const std::string& name, auto&& fill) {
    const json* v = field(body, name);
    if (!v) return;
    if (found) {
      throw bad_request(
          "give only one of guided_json, guided_regex, guided_choice and "
          "guided_grammar (got " +
              found->second + " and " + name + ")",
          name);
    }
    StructuredOutputs s;
    fill(s, *v, name);
    found.emplace(std::move(s), name);
  };
  take("guided_json", [](StructuredOutputs& s, const json& v, const std::string& p) {
    s.json = schema_text(v, p);
  });
  take("guided_regex", [](StructuredOutputs& s, const json& v, const std::string& p) {
    s.regex = string_field(v, p);
  });
  take("guided_choice", [](StructuredOutputs& s, const json& v, const std::string& p) {
    s.choice = choice_list(v, p);
  });
  take("guided_grammar", [](StructuredOutputs& s, const json& v, const std::string& p) {
    s.grammar = string_field(v, p);
  });
  if (field(body, "guided_whitespace_pattern"))
    throw bad_request("guided_whitespace_pattern is not supported", "guided_whitespace_pattern");
  return found;
}

}  // namespace

const std::vector<std::string>& structured_output_field_names() {
  static const std::vector<std::string> names = {"response_format",
                                                 "structured_outputs",
                                                 "guided_json",
                                                 "guided_regex",
                                                 "guided_choice",
                                                 "guided_grammar",
                                                 "guided_decoding_backend",
                                                 "guided_whitespace_pattern"};
  return names;
}

std::string schema_text(const json& schema, const std::string& param) {
  if (schema.is_object() || schema.is_boolean()) return schema.dump();
  if (schema.is_string()) return schema.get<std::string>();  // compiled (and checked) later
  throw bad_request(param + " must be a JSON Schema (an object)", param);
}

StructuredOutputRequest parse_structured_output_fields(const json& body) {
  StructuredOutputRequest r;
  std::vector<std::string> sources;
  if (const json* v = field(body, "response_format")) {
    if (auto s = from_response_format(*v)) {
      r.outputs = std::move(s);
      r.param = "response_format";
      sources.push_back(r.param);
    }
  }
  if (const json* v = field(body, "structured_outputs")) {
    r.outputs = from_structured_outputs(*v);
    r.param = "structured_outputs";
    sources.push_back(r.param);
  }
  if (auto guided = from_guided_fields(body)) {
    r.outputs = std::move(guided->first);
    r.param = guided->second;
    sources.push_back(r.param);
  }
  if (sources.size() > 1) {
    throw bad_request("give only one way of constraining the output (got " + sources[0] + " and " +
                          sources[1] + ")",
                      sources[1]);
  }
  return r;
}

}  // namespace pagedllm::server
