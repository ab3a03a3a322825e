#include "engine/trace.h"

#include "cli/cli_runner.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace pagedllm {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

std::vector<json> run_all(TraceRunner& runner) {
  std::vector<json> lines;
  while (!runner.done()) {
    if (runner.step()) lines.push_back(json::parse(runner.step_json().dump()));
  }
  return lines;
}

TEST(Trace, DesignNotesScenarioReproducesSteps1And2) {
  TraceRunner runner(load_scenario_file(PAGEDLLM_SOURCE_DIR "/examples/design-notes.json"));
  const auto lines = run_all(runner);
  ASSERT_GE(lines.size(), 2u);
  const json& s0 = lines[0];
  EXPECT_EQ(s0["step"], 0);
  EXPECT_EQ(s0["num_scheduled_tokens"], (json{{"0", 3}, {"1", 2}, {"2", 5}}));
  EXPECT_EQ(s0["req_ids"], (json{"0", "1", "2"}));
  EXPECT_EQ(s0["positions"], (json{0, 1, 2, 0, 1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(s0["token_indices"], (json{0, 1, 2, 12, 13, 24, 25, 26, 27, 28}));
  EXPECT_EQ(s0["block_table_indices"], (json{0, 0, 1, 6, 6, 12, 12, 13, 13, 14}));
  EXPECT_EQ(s0["slot_mapping"], (json{2, 3, 4, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(s0["query_start_loc"], (json{0, 3, 5, 10}));
  EXPECT_EQ(s0["seq_lens"], (json{3, 2, 5}));
  EXPECT_EQ(s0["block_ids"], (json{{"0", {1, 2}}, {"1", {3}}, {"2", {4, 5, 6}}}));
  EXPECT_EQ(s0["num_free_blocks"], 9);
  EXPECT_EQ(s0["attn_state"], "PrefillNoCache");
  // prompt_len rule: (1000 + 37 k + 11 i) % 512.
  EXPECT_EQ(s0["input_ids"][0], 1000 % 512);
  EXPECT_EQ(s0["input_ids"][3], (1000 + 37) % 512);
  EXPECT_EQ(s0["input_ids"][9], (1000 + 74 + 44) % 512);

  const json& s1 = lines[1];
  EXPECT_EQ(s1["step"], 1);
  EXPECT_EQ(s1["num_scheduled_tokens"], (json{{"0", 1}, {"1", 1}, {"2", 3}}));
  EXPECT_EQ(s1["positions"], (json{3, 2, 5, 6, 7}));
  EXPECT_EQ(s1["token_indices"], (json{3, 14, 29, 30, 31}));
  EXPECT_EQ(s1["block_table_indices"], (json{1, 7, 14, 15, 15}));
  EXPECT_EQ(s1["block_numbers"], (json{2, 7, 6, 8, 8}));
  EXPECT_EQ(s1["block_offsets"], (json{1, 0, 1, 0, 1}));
  EXPECT_EQ(s1["slot_mapping"], (json{5, 14, 13, 16, 17}));
  EXPECT_EQ(s1["query_start_loc"], (json{0, 1, 2, 5}));
  EXPECT_EQ(s1["seq_lens"], (json{4, 3, 8}));
  EXPECT_EQ(s1["block_ids"], (json{{"0", {1, 2}}, {"1", {3, 7}}, {"2", {4, 5, 6, 8}}}));
  // Stand-in rule: token after position p is (31 p + 7) % 512.
  EXPECT_EQ(s1["input_ids"][0], (31 * 2 + 7) % 512);
  EXPECT_EQ(s1["input_ids"][1], (31 * 1 + 7) % 512);

  const json& last = lines.back();
  EXPECT_EQ(last["finished"].size() > 0, true);
  for (const auto& [id, result] : runner.results()) {
    EXPECT_EQ(result.finish_reason, FinishReason::kLength) << id;
    EXPECT_EQ(result.output_token_ids.size(), 4u) << id;
  }
}

TEST(Trace, ArrivalsAbortsAndIdleSteps) {
  const json doc = json::parse(R"({
    "config": {"block_size": 4, "num_blocks": 20, "max_model_len": 32,
               "max_num_batched_tokens": 16, "max_num_seqs": 4, "enable_prefix_caching": false},
    "requests": [
      {"id": "a", "prompt_len": 4, "max_tokens": 2, "arrival_step": 0},
      {"id": "b", "prompt_len": 4, "max_tokens": 20, "arrival_step": 5, "abort_step": 7}
    ]})");
  TraceRunner runner(parse_scenario(doc));
  const auto lines = run_all(runner);
  std::vector<int> steps;
  for (const auto& l : lines) steps.push_back(l["step"].get<int>());
  // a runs at steps 0-1; steps 2-4 are idle (not printed); b runs 5-6 and is aborted before 7.
  EXPECT_EQ(steps, (std::vector<int>{0, 1, 5, 6}));
  EXPECT_EQ(lines[1]["finished"], (json{"a"}));
  EXPECT_EQ(lines[2]["num_cached_tokens"], (json{{"b", 0}}));
  EXPECT_EQ(runner.results().at("b").finish_reason, FinishReason::kAbort);
  EXPECT_EQ(runner.results().at("b").output_token_ids.size(), 2u);
  EXPECT_EQ(runner.engine().scheduler().kv_cache_manager().num_free_blocks(), 19);
}

TEST(Trace, AbsentMaxTokensRunsUpToMaxModelLen) {
  const json doc = json::parse(R"({
    "config": {"block_size": 2, "num_blocks": 8, "max_model_len": 10, "max_num_batched_tokens": 10,
               "max_num_seqs": 2},
    "requests": [{"id": "x", "prompt_token_ids": [5, 6, 7]}]})");
  TraceRunner runner(parse_scenario(doc));
  run_all(runner);
  EXPECT_EQ(runner.results().at("x").output_token_ids.size(), 7u);
}

TEST(Trace, PrefixCachingShowsCachedTokensForASharedPrompt) {
  const json doc = json::parse(R"({
    "config": {"block_size": 4, "num_blocks": 20, "max_model_len": 32,
               "max_num_batched_tokens": 32, "max_num_seqs": 4, "enable_prefix_caching": true},
    "requests": [
      {"id": "a", "prompt_token_ids": [1,2,3,4,5,6,7,8,9], "max_tokens": 1, "arrival_step": 0},
      {"id": "b", "prompt_token_ids": [1,2,3,4,5,6,7,8,10], "max_tokens": 1, "arrival_step": 1}
    ]})");
  TraceRunner runner(parse_scenario(doc));
  const auto lines = run_all(runner);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["num_cached_tokens"], (json{{"b", 8}}));
  EXPECT_EQ(lines[1]["num_scheduled_tokens"], (json{{"b", 1}}));
  EXPECT_EQ(lines[1]["positions"], (json{8}));
}

TEST(Trace, ScenarioErrorsNameTheField) {
  auto error_of = [](const char* text) -> std::string {
    try {
      parse_scenario(json::parse(text));
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(R"({"config": {}})").find("requests"), std::string::npos);
  EXPECT_NE(
      error_of(R"({"config": {"block_size": "x"}, "requests": []})").find("config.block_size"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"requests": [{"id": "a"}]})").find("requests[0]"), std::string::npos);
  EXPECT_NE(error_of(R"({"requests": [{"prompt_token_ids": [1, 99999]}]})").find("vocab_size"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"requests": [{"id": 1, "prompt_len": 2}, {"id": "1", "prompt_len": 2}]})")
                .find("repeats"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("object"), std::string::npos);
}

using test::CliResult;
using test::run_cli;
using test::write_temp;

TEST(TraceCli, PrintsOneJsonLinePerScheduledStep) {
  const CliResult r =
      run_cli("trace --scenario " PAGEDLLM_SOURCE_DIR "/examples/design-notes.json");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<json> lines;
  size_t start = 0;
  while (start < r.out.size()) {
    const size_t end = r.out.find('\n', start);
    lines.push_back(json::parse(r.out.substr(start, end - start)));
    start = end + 1;
  }
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[1]["slot_mapping"], (json{5, 14, 13, 16, 17}));
  for (const char* key : {"step", "num_scheduled_tokens", "req_ids", "positions", "input_ids",
                          "slot_mapping", "query_start_loc", "seq_lens", "block_ids",
                          "num_free_blocks", "preempted", "finished", "num_cached_tokens"}) {
    EXPECT_TRUE(lines[0].contains(key)) << key;
  }
}

TEST(TraceCli, BadInputExitsNonZeroWithOneLineReason) {
  const std::string bad_json = write_temp("bad.json", "{not json");
  CliResult r = run_cli("trace --scenario " + bad_json);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  const std::string too_long = write_temp("too_long.json", R"({
    "config": {"block_size": 2, "num_blocks": 16, "max_model_len": 12, "max_num_batched_tokens": 12},
    "requests": [{"id": "big", "prompt_len": 10, "max_tokens": 5}]})");
  r = run_cli("trace --scenario " + too_long);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("exceeds max_model_len (12)"), std::string::npos) << r.err;

  const std::string bad_config = write_temp("bad_config.json", R"({
    "config": {"block_size": 2, "num_blocks": 3, "max_model_len": 12},
    "requests": [{"id": "a", "prompt_len": 2, "max_tokens": 1}]})");
  r = run_cli("trace --scenario " + bad_config);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("usable blocks"), std::string::npos) << r.err;

  r = run_cli("trace --scenario /nonexistent/file.json");
  EXPECT_NE(r.code, 0);
  r = run_cli("frobnicate");
  EXPECT_NE(r.code, 0);
}

TEST(TraceCli, HelpExplainsTheFlags) {
  const CliResult r = run_cli("trace --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--scenario"), std::string::npos);
  EXPECT_NE(r.out.find("--summary"), std::string::npos);
}

}  // namespace
}  // namespace pagedllm
