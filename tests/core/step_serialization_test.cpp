// What crosses the core/worker boundary survives a trip through bytes, every field of it, and
// bytes that are not such a document are refused with an error rather than misread.
#include "core/step_serialization.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace pagedllm {
namespace {

SchedulerOutput full_scheduler_output() {
  SamplingParams p;
  p.max_tokens = 77;
  p.min_tokens = 3;
  p.stop_token_ids = {5, 9};
  p.ignore_eos = true;
  p.temperature = 0.7f;
  p.top_p = 0.9f;
  p.top_k = 40;
  p.min_p = 0.05f;
  p.seed = 0xFFFF'FFFF'FFFF'FFF0ULL;  // above 2^63: must stay unsigned
  p.presence_penalty = 0.25f;
  p.frequency_penalty = -0.5f;
  p.repetition_penalty = 1.1f;
  p.logprobs = 4;
  p.structured_outputs = StructuredOutputs{};
  p.structured_outputs->choice = std::vector<std::string>{"yes", "no"};
  p.structured_outputs->disable_any_whitespace = true;
  p.structured_outputs->start_after = {7, 8};
  SchedulerOutput out;
  auto pixels = std::make_shared<EncoderInput>();
  pixels->pixel_values = {0.5f, -1.25f, 3.0f, 1e-7f};
  pixels->grid_t = 1, pixels->grid_h = 2, pixels->grid_w = 4;
  out.scheduled_new_reqs.push_back(
      {"new-1", {1, 2, 3, 4}, p, {7, 8}, 16, 2, {{"ab12", 1, 2, pixels}}});
  out.scheduled_new_reqs.push_back({"new-2", {9}, SamplingParams{}, {3}, 0, std::nullopt, {}});
  out.scheduled_cached_reqs.push_back({"old-1", {11}, 40, false, {17, 18, 19}});
  out.scheduled_cached_reqs.push_back({"resumed", {4, 5, 6}, 0, true, {}});
  out.num_scheduled_tokens = {{"old-1", 4}, {"resumed", 30}, {"new-1", 4}, {"new-2", 1}};
  out.total_num_scheduled_tokens = 39;
  out.finished_req_ids = {"gone"};
  out.preempted_req_ids = {"victim-a", "victim-b"};
  out.scheduled_encoder_inputs = {{"new-1", {0}}};
  out.free_encoder_identifiers = {"cd34"};
  return out;
}

void expect_same_params(const SamplingParams& a, const SamplingParams& b) {
  EXPECT_EQ(a.max_tokens, b.max_tokens);
  EXPECT_EQ(a.min_tokens, b.min_tokens);
  EXPECT_EQ(a.stop_token_ids, b.stop_token_ids);
  EXPECT_EQ(a.ignore_eos, b.ignore_eos);
  EXPECT_EQ(a.temperature, b.temperature);
  EXPECT_EQ(a.top_p, b.top_p);
  EXPECT_EQ(a.top_k, b.top_k);
  EXPECT_EQ(a.min_p, b.min_p);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.presence_penalty, b.presence_penalty);
  EXPECT_EQ(a.frequency_penalty, b.frequency_penalty);
  EXPECT_EQ(a.repetition_penalty, b.repetition_penalty);
  EXPECT_EQ(a.logprobs, b.logprobs);
  ASSERT_EQ(a.structured_outputs.has_value(), b.structured_outputs.has_value());
  if (!a.structured_outputs) return;
  const StructuredOutputs &x = *a.structured_outputs, &y = *b.structured_outputs;
  EXPECT_EQ(x.json, y.json);
  EXPECT_EQ(x.regex, y.regex);
  EXPECT_EQ(x.choice, y.choice);
  EXPECT_EQ(x.grammar, y.grammar);
  EXPECT_EQ(x.json_object, y.json_object);
  EXPECT_EQ(x.disable_any_whitespace, y.disable_any_whitespace);
  EXPECT_EQ(x.disable_additional_properties, y.disable_additional_properties);
  EXPECT_EQ(x.start_after, y.start_after);
}

TEST(StepSerialization, SchedulerOutputRoundTripsEveryField) {
  const SchedulerOutput a = full_scheduler_output();
  const SchedulerOutput b = deserialize_scheduler_output(serialize(a));
  ASSERT_EQ(b.scheduled_new_reqs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto &x = a.scheduled_new_reqs[i], &y = b.scheduled_new_reqs[i];
    EXPECT_EQ(x.req_id, y.req_id);
    EXPECT_EQ(x.prompt_token_ids, y.prompt_token_ids);
    expect_same_params(x.sampling_params, y.sampling_params);
    EXPECT_EQ(x.block_ids, y.block_ids);
    EXPECT_EQ(x.num_computed_tokens, y.num_computed_tokens);
    EXPECT_EQ(x.eos_token_id, y.eos_token_id);
    ASSERT_EQ(x.mm_features.size(), y.mm_features.size());
    for (size_t k = 0; k < x.mm_features.size(); ++k) {
      const MultiModalFeature &f = x.mm_features[k], &g = y.mm_features[k];
      EXPECT_EQ(f.identifier, g.identifier);
      EXPECT_EQ(f.offset, g.offset);
      EXPECT_EQ(f.length, g.length);
      EXPECT_EQ(f.input->pixel_values, g.input->pixel_values);
      EXPECT_EQ(f.input->grid_t, g.input->grid_t);
      EXPECT_EQ(f.input->grid_h, g.input->grid_h);
      EXPECT_EQ(f.input->grid_w, g.input->grid_w);
    }
  }
  ASSERT_EQ(b.scheduled_new_reqs[0].mm_features.size(), 1u);
  ASSERT_EQ(b.scheduled_encoder_inputs.size(), 1u);
  EXPECT_EQ(b.scheduled_encoder_inputs[0].req_id, "new-1");
  EXPECT_EQ(b.scheduled_encoder_inputs[0].inputs, std::vector<int>{0});
  EXPECT_EQ(b.free_encoder_identifiers, std::vector<std::string>{"cd34"});
  ASSERT_EQ(b.scheduled_cached_reqs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto &x = a.scheduled_cached_reqs[i], &y = b.scheduled_cached_reqs[i];
    EXPECT_EQ(x.req_id, y.req_id);
    EXPECT_EQ(x.new_block_ids, y.new_block_ids);
    EXPECT_EQ(x.num_computed_tokens, y.num_computed_tokens);
    EXPECT_EQ(x.resumed_from_preemption, y.resumed_from_preemption);
    EXPECT_EQ(x.spec_token_ids, y.spec_token_ids);
  }
  ASSERT_EQ(b.num_scheduled_tokens.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a.num_scheduled_tokens[i].req_id, b.num_scheduled_tokens[i].req_id);
    EXPECT_EQ(a.num_scheduled_tokens[i].num_tokens, b.num_scheduled_tokens[i].num_tokens);
  }
  EXPECT_EQ(b.total_num_scheduled_tokens, 39);
  EXPECT_EQ(b.finished_req_ids, a.finished_req_ids);
  EXPECT_EQ(b.preempted_req_ids, a.preempted_req_ids);
  EXPECT_EQ(b.scheduled_new_reqs[0].sampling_params.seed, 0xFFFF'FFFF'FFFF'FFF0ULL);
  EXPECT_FALSE(b.scheduled_new_reqs[1].sampling_params.seed.has_value());
  EXPECT_FALSE(b.scheduled_new_reqs[1].sampling_params.logprobs.has_value());
}

TEST(StepSerialization, ModelRunnerOutputRoundTripsSeveralTokensPerRequestWithLogprobs) {
  ModelRunnerOutput a;
  a.resize(3);
  a.req_ids = {"a", "partial", "c"};
  a.sampled_token_ids[0] = {12};
  a.sampled_token_ids[2] = {4, 5, 6};
  a.spec_token_ids[2] = {7, 8};
  a.sampled[0] = {{12, -0.125f, {{12, -0.125f}, {3, -2.5f}}}};
  a.sampled[2] = {{4, -1.0f, {}}, {5, -0.5f, {}}, {6, -3.75f, {{6, -3.75f}}}};
  const ModelRunnerOutput b = deserialize_model_runner_output(serialize(a));
  EXPECT_EQ(b.req_ids, a.req_ids);
  EXPECT_EQ(b.sampled_token_ids, a.sampled_token_ids);
  EXPECT_EQ(b.spec_token_ids, a.spec_token_ids);
  ASSERT_EQ(b.sampled.size(), 3u);
  EXPECT_TRUE(b.sampled[1].empty());
  ASSERT_EQ(b.sampled[2].size(), 3u);
  EXPECT_EQ(b.sampled[2][2].token_id, 6);
  EXPECT_EQ(b.sampled[2][2].logprob, -3.75f);
  ASSERT_EQ(b.sampled[0][0].top_logprobs.size(), 2u);
  EXPECT_EQ(b.sampled[0][0].top_logprobs[1].token_id, 3);
  EXPECT_EQ(b.sampled[0][0].top_logprobs[1].logprob, -2.5f);
}

TEST(StepSerialization, GarbageTruncatedAndMismatchedDocumentsAreRefused) {
  const std::vector<uint8_t> garbage = {0xde, 0xad, 0xbe, 0xef};
  EXPECT_THROW(deserialize_scheduler_output(garbage), std::invalid_argument);
  EXPECT_THROW(deserialize_model_runner_output(garbage), std::invalid_argument);
  std::vector<uint8_t> bytes = serialize(full_scheduler_output());
  bytes.resize(bytes.size() / 2);
  EXPECT_THROW(deserialize_scheduler_output(bytes), std::invalid_argument);
  // A runner output is not a scheduler output, and the reverse.
  ModelRunnerOutput r;
  r.resize(1);
  r.req_ids = {"x"};
  EXPECT_THROW(deserialize_scheduler_output(serialize(r)), std::invalid_argument);
  EXPECT_THROW(deserialize_model_runner_output(serialize(full_scheduler_output())),
               std::invalid_argument);
}

}  // namespace
}  // namespace pagedllm
