#include "core/step_serialization.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace pagedllm {

namespace {

using json = nlohmann::json;

// A version tag in every document, so that mismatched builds fail loudly rather than misread.
constexpr int kFormatVersion = 3;

template <typename T>
json optional_to_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

template <typename T>
std::optional<T> optional_from_json(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<T>();
}

json to_json(const StructuredOutputs& s) {
  return {{"json", optional_to_json(s.json)},
          {"regex", optional_to_json(s.regex)},
          {"choice", optional_to_json(s.choice)},
          {"grammar", optional_to_json(s.grammar)},
          {"json_object", s.json_object},
          {"disable_any_whitespace", s.disable_any_whitespace},
          {"disable_additional_properties", s.disable_additional_properties},
          {"start_after", s.start_after}};
}

StructuredOutputs structured_outputs_from(const json& j) {
  StructuredOutputs s;
  s.json = optional_from_json<std::string>(j.at("json"));
  s.regex = optional_from_json<std::string>(j.at("regex"));
  s.choice = optional_from_json<std::vector<std::string>>(j.at("choice"));
  s.grammar = optional_from_json<std::string>(j.at("grammar"));
  s.json_object = j.at("json_object").get<bool>();
  s.disable_any_whitespace = j.at("disable_any_whitespace").get<bool>();
  s.disable_additional_properties = j.at("disable_additional_properties").get<bool>();
  s.start_after = j.at("start_after").get<std::vector<int32_t>>();
  return s;
}

json to_json(const SamplingParams& p) {
  return {{"max_tokens", p.max_tokens},
          {"min_tokens", p.min_tokens},
          {"stop_token_ids", p.stop_token_ids},
          {"ignore_eos", p.ignore_eos},
          {"temperature", p.temperature},
          {"top_p", p.top_p},
          {"top_k", p.top_k},
          {"min_p", p.min_p},
          {"seed", optional_to_json(p.seed)},
          {"presence_penalty", p.presence_penalty},
          {"frequency_penalty", p.frequency_penalty},
          {"repetition_penalty", p.repetition_penalty},
          {"logprobs", optional_to_json(p.logprobs)},
          {"structured_outputs",
           p.structured_outputs ? to_json(*p.structured_outputs) : json(nullptr)}};
}

SamplingParams sampling_params_from(const json& j) {
  SamplingParams p;
  p.max_tokens = j.at("max_tokens").get<int>();
  p.min_tokens = j.at("min_tokens").get<int>();
  p.stop_token_ids = j.at("stop_token_ids").get<std::vector<int32_t>>();
  p.ignore_eos = j.at("ignore_eos").get<bool>();
  p.temperature = j.at("temperature").get<float>();
  p.top_p = j.at("top_p").get<float>();
  p.top_k = j.at("top_k").get<int>();
  p.min_p = j.at("min_p").get<float>();
  p.seed = optional_from_json<uint64_t>(j.at("seed"));
  p.presence_penalty = j.at("presence_penalty").get<float>();
  p.frequency_penalty = j.at("frequency_penalty").get<float>();
  p.repetition_penalty = j.at("repetition_penalty").get<float>();
  p.logprobs = optional_from_json<int>(j.at("logprobs"));
  if (const json& s = j.at("structured_outputs"); !s.is_null())
    p.structured_outputs = structured_outputs_from(s);
  return p;
}

json to_json(const SampledToken& s) {
  json top = json::array();
  for (const TokenLogprob& t : s.top_logprobs) top.push_back({t.token_id, t.logprob});
  return {s.token_id, s.logprob, std::move(top)};
}

SampledToken sampled_token_from(const json& j) {
  SampledToken s;
  s.token_id = j.at(0).get<int32_t>();
  s.logprob = j.at(1).get<float>();
  for (const json& t : j.at(2))
    s.top_logprobs.push_back({t.at(0).get<int32_t>(), t.at(1).get<float>()});
  return s;
}

json document(const char* kind, json body) {
  return {{"kind", kind}, {"version", kFormatVersion}, {"body", std::move(body)}};
}

json open_document(std::span<const uint8_t> bytes, const char* kind) {
  json doc = json::from_msgpack(bytes.begin(), bytes.end(), /*strict=*/true,
                                /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw std::invalid_argument(std::string("not a serialized ") + kind);
  }
  if (doc.value("kind", "") != kind || doc.value("version", 0) != kFormatVersion) {
    throw std::invalid_argument(std::string("expected a ") + kind + " document of version " +
                                std::to_string(kFormatVersion));
  }
  return std::move(doc["body"]);
}

// Images travel with their pixels, as raw f32 bytes (msgpack's binary type).
json to_json(const std::vector<MultiModalFeature>& features) {
  json list = json::array();
  for (const MultiModalFeature& f : features) {
    const EncoderInput& in = *f.input;
    const auto* bytes = reinterpret_cast<const uint8_t*>(in.pixel_values.data());
    list.push_back({f.identifier, f.offset, f.length, in.grid_t, in.grid_h, in.grid_w,
                    json::binary_t(std::vector<uint8_t>(
                        bytes, bytes + in.pixel_values.size() * sizeof(float)))});
  }
  return list;
}

std::vector<MultiModalFeature> features_from(const json& list) {
  std::vector<MultiModalFeature> features;
  for (const json& f : list) {
    auto input = std::make_shared<EncoderInput>();
    input->grid_t = f.at(3).get<int64_t>();
    input->grid_h = f.at(4).get<int64_t>();
    input->grid_w = f.at(5).get<int64_t>();
    const auto& bytes = f.at(6).get_binary();
    if (bytes.size() % sizeof(float) != 0)
      throw std::invalid_argument("malformed SchedulerOutput: pixel bytes");
    input->pixel_values.resize(bytes.size() / sizeof(float));
    std::memcpy(input->pixel_values.data(), bytes.data(), bytes.size());
    features.push_back({f.at(0).get<std::string>(), f.at(1).get<int64_t>(), f.at(2).get<int64_t>(),
                        std::move(input)});
  }
  return features;
}

// Wraps the nlohmann exceptions of a malformed body in the documented one.
template <typename F>
auto decode(const char* kind, F&& f) {
  try {
    return f();
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("malformed ") + kind + ": " + e.what());
  }
}

}  // namespace

std::vector<uint8_t> serialize(const SchedulerOutput& out) {
  json new_reqs = json::array();
  for (const NewRequestData& n : out.scheduled_new_reqs) {
    new_reqs.push_back({n.req_id, n.prompt_token_ids, to_json(n.sampling_params), n.block_ids,
                        n.num_computed_tokens, optional_to_json(n.eos_token_id),
                        to_json(n.mm_features)});
  }
  json cached = json::array();
  for (const CachedRequestData& c : out.scheduled_cached_reqs) {
    cached.push_back({c.req_id, c.new_block_ids, c.num_computed_tokens, c.resumed_from_preemption,
                      c.spec_token_ids});
  }
  json scheduled = json::array();
  for (const ScheduledTokens& s : out.num_scheduled_tokens) {
    scheduled.push_back({s.req_id, s.num_tokens});
  }
  json encoder = json::array();
  for (const ScheduledEncoderInputs& e : out.scheduled_encoder_inputs)
    encoder.push_back({e.req_id, e.inputs});
  return json::to_msgpack(
      document("SchedulerOutput", {{"new", std::move(new_reqs)},
                                   {"encoder", std::move(encoder)},
                                   {"free_encoder", out.free_encoder_identifiers},
                                   {"cached", std::move(cached)},
                                   {"scheduled", std::move(scheduled)},
                                   {"total", out.total_num_scheduled_tokens},
                                   {"finished", out.finished_req_ids},
                                   {"preempted", out.preempted_req_ids}}));
}

SchedulerOutput deserialize_scheduler_output(std::span<const uint8_t> bytes) {
  const json body = open_document(bytes, "SchedulerOutput");
  return decode("SchedulerOutput", [&] {
    SchedulerOutput out;
    for (const json& n : body.at("new")) {
      out.scheduled_new_reqs.push_back(
          {n.at(0).get<std::string>(), n.at(1).get<std::vector<int32_t>>(),
           sampling_params_from(n.at(2)), n.at(3).get<std::vector<int32_t>>(), n.at(4).get<int>(),
           optional_from_json<int32_t>(n.at(5)), features_from(n.at(6))});
    }
    for (const json& c : body.at("cached")) {
      out.scheduled_cached_reqs.push_back(
          {c.at(0).get<std::string>(), c.at(1).get<std::vector<int32_t>>(), c.at(2).get<int>(),
           c.at(3).get<bool>(), c.at(4).get<std::vector<int32_t>>()});
    }
    for (const json& s : body.at("scheduled")) {
      out.num_scheduled_tokens.push_back({s.at(0).get<std::string>(), s.at(1).get<int>()});
    }
    for (const json& e : body.at("encoder"))
      out.scheduled_encoder_inputs.push_back(
          {e.at(0).get<std::string>(), e.at(1).get<std::vector<int>>()});
    out.free_encoder_identifiers = body.at("free_encoder").get<std::vector<std::string>>();
    out.total_num_scheduled_tokens = body.at("total").get<int>();
    out.finished_req_ids = body.at("finished").get<std::vector<std::string>>();
    out.preempted_req_ids = body.at("preempted").get<std::vector<std::string>>();
    return out;
  });
}

std::vector<uint8_t> serialize(const ModelRunnerOutput& out) {
  json sampled = json::array();
  for (const auto& tokens : out.sampled) {
    json list = json::array();
    for (const SampledToken& s : tokens) list.push_back(to_json(s));
    sampled.push_back(std::move(list));
  }
  return json::to_msgpack(document("ModelRunnerOutput", {{"req_ids", out.req_ids},
                                                         {"tokens", out.sampled_token_ids},
                                                         {"sampled", std::move(sampled)},
                                                         {"spec", out.spec_token_ids}}));
}

ModelRunnerOutput deserialize_model_runner_output(std::span<const uint8_t> bytes) {
  const json body = open_document(bytes, "ModelRunnerOutput");
  return decode("ModelRunnerOutput", [&] {
    ModelRunnerOutput out;
    out.req_ids = body.at("req_ids").get<std::vector<std::string>>();
    out.sampled_token_ids = body.at("tokens").get<std::vector<std::vector<int32_t>>>();
    for (const json& list : body.at("sampled")) {
      auto& tokens = out.sampled.emplace_back();
      for (const json& s : list) tokens.push_back(sampled_token_from(s));
    }
    out.spec_token_ids = body.at("spec").get<std::vector<std::vector<int32_t>>>();
    if (out.sampled_token_ids.size() != out.req_ids.size() ||
        out.sampled.size() != out.req_ids.size() ||
        (!out.spec_token_ids.empty() && out.spec_token_ids.size() != out.req_ids.size())) {
      throw std::invalid_argument("malformed ModelRunnerOutput: lists of different lengths");
    }
    return out;
  });
}

}  // namespace pagedllm
