#include "core/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <numeric>

#include "model/stand_in_model.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

EngineConfig small_config() {
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.cache.num_blocks = 64;
  cfg.cache.enable_prefix_caching = false;
  cfg.scheduler.max_model_len = 64;
  cfg.scheduler.max_num_batched_tokens = 16;
  cfg.scheduler.max_num_seqs = 4;
  return cfg;
}

std::unique_ptr<Request> make_request(const std::string& id, int prompt_len, int max_tokens,
                                      int first_token = 1) {
  Ids prompt(static_cast<size_t>(prompt_len));
  std::iota(prompt.begin(), prompt.end(), first_token);
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return std::make_unique<Request>(id, prompt, p);
}

// Drives the scheduler alone: every request whose prompt is done samples the stand-in token.
class SchedulerDriver {
 public:
  explicit SchedulerDriver(const EngineConfig& cfg) : scheduler(cfg) {}

  const SchedulerOutput& step() {
    scheduler.schedule(out);
    runner_out.resize(out.num_scheduled_tokens.size());
    for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
      const Request* r = scheduler.find_request(out.num_scheduled_tokens[k].req_id);
      const int last_pos = r->num_computed_tokens - 1;
      runner_out.req_ids[k] = r->id();
      runner_out.sampled_token_ids[k].push_back(StandInModel::next_token(last_pos, 512));
    }
    outputs.clear();
    scheduler.update_from_output(out, runner_out, outputs);
    for (const auto& o : outputs) {
      auto& t = tokens[o.req_id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finish_reason) finish_reasons[o.req_id] = *o.finish_reason;
    }
    return out;
  }
  int run_to_completion(int max_steps = 10000) {
    int steps = 0;
    while (scheduler.has_unfinished_requests() && steps < max_steps) {
      step();
      ++steps;
    }
    return steps;
  }

  Scheduler scheduler;
  SchedulerOutput out;
  ModelRunnerOutput runner_out;
  std::vector<EngineCoreOutput> outputs;
  std::map<std::string, Ids> tokens;
  std::map<std::string, FinishReason> finish_reasons;
};

Ids expected_tokens(int prompt_len, int max_tokens) {
  Ids t;
  for (int k = 0; k < max_tokens; ++k)
    t.push_back(StandInModel::next_token(prompt_len - 1 + k, 512));
  return t;
}

int scheduled_for(const SchedulerOutput& out, const std::string& id) {
  for (const auto& s : out.num_scheduled_tokens) {
    if (s.req_id == id) return s.num_tokens;
  }
  return 0;
}

TEST(Scheduler, RespectsTheTokenBudgetAndMaxNumSeqs) {
  EngineConfig cfg = small_config();
  cfg.scheduler.max_num_seqs = 2;
  SchedulerDriver d(cfg);
  for (int i = 0; i < 4; ++i) d.scheduler.add_request(make_request(std::to_string(i), 5, 3));
  const auto& out = d.step();
  EXPECT_EQ(out.num_scheduled_tokens.size(), 2u);  // max_num_seqs
  EXPECT_EQ(out.total_num_scheduled_tokens, 10);
  EXPECT_EQ(d.scheduler.num_waiting(), 2);
  while (d.scheduler.has_unfinished_requests()) {
    const auto& o = d.step();
    EXPECT_LE(o.total_num_scheduled_tokens, cfg.scheduler.max_num_batched_tokens);
    EXPECT_LE(static_cast<int>(o.num_scheduled_tokens.size()), 2);
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d.tokens[std::to_string(i)], expected_tokens(5, 3));
}

TEST(Scheduler, ChunkedPrefillSplitsALongPromptOverSteps) {
  SchedulerDriver d(small_config());
  d.scheduler.add_request(make_request("long", 40, 2));
  EXPECT_EQ(scheduled_for(d.step(), "long"), 16);
  EXPECT_TRUE(d.outputs.empty());  // partial prefill: its sample is discarded
  EXPECT_EQ(scheduled_for(d.step(), "long"), 16);
  EXPECT_EQ(scheduled_for(d.step(), "long"), 8);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].new_token_ids, Ids{StandInModel::next_token(39, 512)});
  EXPECT_EQ(scheduled_for(d.step(), "long"), 1);
  EXPECT_EQ(d.finish_reasons["long"], FinishReason::kLength);
}

TEST(Scheduler, LongPrefillThresholdCapsEachChunk) {
  EngineConfig cfg = small_config();
  cfg.scheduler.long_prefill_token_threshold = 6;
  SchedulerDriver d(cfg);
  d.scheduler.add_request(make_request("a", 20, 1));
  d.scheduler.add_request(make_request("b", 3, 1));
  const auto& out = d.step();
  EXPECT_EQ(scheduled_for(out, "a"), 6);
  EXPECT_EQ(scheduled_for(out, "b"), 3);
}

TEST(Scheduler, MaxNumPartialPrefillsLimitsUnfinishedPromptsPerStep) {
  EngineConfig cfg = small_config();
  cfg.scheduler.long_prefill_token_threshold = 4;
  cfg.scheduler.max_num_partial_prefills = 1;
  SchedulerDriver d(cfg);
  d.scheduler.add_request(make_request("a", 10, 1));
  d.scheduler.add_request(make_request("b", 10, 1));
  const auto& out = d.step();
  EXPECT_EQ(scheduled_for(out, "a"), 4);
  EXPECT_EQ(scheduled_for(out, "b"), 0);  // would be a second partial prefill
}

TEST(Scheduler, WithoutChunkedPrefillALongPromptBlocksThoseBehindIt) {
  EngineConfig cfg = small_config();
  cfg.scheduler.enable_chunked_prefill = false;
  cfg.scheduler.max_num_batched_tokens = 64;
  SchedulerDriver d(cfg);
  d.scheduler.add_request(make_request("short1", 30, 2));
  d.scheduler.add_request(make_request("big", 40, 2));
  d.scheduler.add_request(make_request("short2", 4, 2));
  const auto& out = d.step();
  EXPECT_EQ(scheduled_for(out, "short1"), 30);
  EXPECT_EQ(scheduled_for(out, "big"), 0);     // 40 > 34 left: waits whole
  EXPECT_EQ(scheduled_for(out, "short2"), 0);  // and blocks the queue behind it
  const auto& out2 = d.step();
  EXPECT_EQ(scheduled_for(out2, "big"), 40);
  EXPECT_EQ(scheduled_for(out2, "short2"), 4);
}

TEST(Scheduler, PreemptsTheNewestRequestAndItResumesWithTheSameTokens) {
  EngineConfig cfg = small_config();
  cfg.cache.block_size = 2;
  cfg.cache.num_blocks = 9;  // 8 usable blocks = 16 token slots
  cfg.scheduler.max_model_len = 16;
  SchedulerDriver d(cfg);
  d.scheduler.add_request(make_request("old", 6, 8));
  d.scheduler.add_request(make_request("new", 6, 8, 100));
  bool saw_preemption = false;
  while (d.scheduler.has_unfinished_requests()) {
    const auto& out = d.step();
    if (!out.preempted_req_ids.empty()) {
      saw_preemption = true;
      EXPECT_EQ(out.preempted_req_ids[0], "new");
      EXPECT_EQ(scheduled_for(out, "new"), 0);
      // Nothing new is admitted in a step that preempted.
      EXPECT_TRUE(out.scheduled_new_reqs.empty());
    }
    for (const auto& c : out.scheduled_cached_reqs) {
      if (c.resumed_from_preemption) {
        EXPECT_EQ(c.req_id, "new");
        EXPECT_EQ(c.num_computed_tokens, 0);
      }
    }
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_GE(d.scheduler.num_preemptions_total(), 1);
  EXPECT_EQ(d.tokens["old"], expected_tokens(6, 8));
  EXPECT_EQ(d.tokens["new"], expected_tokens(6, 8));
  EXPECT_EQ(d.scheduler.kv_cache_manager().num_free_blocks(), 8);
}

TEST(Scheduler, PriorityPolicyPreemptsTheLowestPriority) {
  EngineConfig cfg = small_config();
  cfg.cache.block_size = 2;
  cfg.cache.num_blocks = 9;
  cfg.scheduler.max_model_len = 16;
  cfg.scheduler.policy = SchedulingPolicy::kPriority;
  SchedulerDriver d(cfg);
  Ids prompt = {1, 2, 3, 4, 5, 6};
  SamplingParams p;
  p.max_tokens = 8;
  p.ignore_eos = true;
  d.scheduler.add_request(std::make_unique<Request>("low", prompt, p, std::nullopt, 0.0, 5));
  d.scheduler.add_request(std::make_unique<Request>("high", prompt, p, std::nullopt, 1.0, 0));
  std::vector<std::string> preempted;
  while (d.scheduler.has_unfinished_requests()) {
    const auto& out = d.step();
    preempted.insert(preempted.end(), out.preempted_req_ids.begin(), out.preempted_req_ids.end());
  }
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted[0], "low");
  EXPECT_EQ(d.tokens["low"], expected_tokens(6, 8));
  EXPECT_EQ(d.tokens["high"], expected_tokens(6, 8));
}

TEST(Scheduler, PriorityPolicyAdmitsLowerValuesFirst) {
  EngineConfig cfg = small_config();
  cfg.scheduler.policy = SchedulingPolicy::kPriority;
  cfg.scheduler.max_num_seqs = 1;
  SchedulerDriver d(cfg);
  SamplingParams p;
  p.max_tokens = 1;
  d.scheduler.add_request(std::make_unique<Request>("later", Ids{1, 2}, p, std::nullopt, 0.0, 3));
  d.scheduler.add_request(std::make_unique<Request>("first", Ids{1, 2}, p, std::nullopt, 1.0, 1));
  EXPECT_EQ(scheduled_for(d.step(), "first"), 2);
}

TEST(Scheduler, StopsOnEosStopTokensAndRespectsMinTokens) {
  EngineConfig cfg = small_config();
  SchedulerDriver d(cfg);
  // Prompt of 3: the first sampled token is next_token(2) = 69, then next_token(3) = 100.
  SamplingParams eos;
  eos.max_tokens = 10;
  d.scheduler.add_request(std::make_unique<Request>("eos", Ids{1, 2, 3}, eos, 69));
  SamplingParams stop;
  stop.max_tokens = 10;
  stop.stop_token_ids = {100};
  d.scheduler.add_request(std::make_unique<Request>("stop", Ids{1, 2, 3}, stop));
  SamplingParams min_tokens = eos;
  min_tokens.min_tokens = 2;
  min_tokens.stop_token_ids = {69, 131};
  d.scheduler.add_request(std::make_unique<Request>("min", Ids{1, 2, 3}, min_tokens, 69));
  SamplingParams ignore = eos;
  ignore.ignore_eos = true;
  ignore.max_tokens = 3;
  d.scheduler.add_request(std::make_unique<Request>("ignore", Ids{1, 2, 3}, ignore, 69));
  d.run_to_completion();
  EXPECT_EQ(d.tokens["eos"], (Ids{69}));
  EXPECT_EQ(d.finish_reasons["eos"], FinishReason::kStop);
  EXPECT_EQ(d.tokens["stop"], (Ids{69, 100}));
  EXPECT_EQ(d.finish_reasons["stop"], FinishReason::kStop);
  EXPECT_EQ(d.tokens["min"], (Ids{69, 100, 131}));
  EXPECT_EQ(d.finish_reasons["min"], FinishReason::kStop);
  EXPECT_EQ(d.tokens["ignore"], (Ids{69, 100, 131}));
  EXPECT_EQ(d.finish_reasons["ignore"], FinishReason::kLength);
}

TEST(Scheduler, AbortFreesBlocksAndReportsTheIdToTheWorker) {
  SchedulerDriver d(small_config());
  d.scheduler.add_request(make_request("a", 10, 5));
  d.scheduler.add_request(make_request("b", 10, 5));
  d.step();
  const int free_before = d.scheduler.kv_cache_manager().num_free_blocks();
  const std::vector<std::string> ids = {"a", "missing"};
  EXPECT_EQ(d.scheduler.finish_requests(ids, RequestStatus::kFinishedAborted),
            std::vector<std::string>{"a"});
  EXPECT_EQ(d.scheduler.kv_cache_manager().num_free_blocks(), free_before + 3);
  const auto& out = d.step();
  EXPECT_EQ(out.finished_req_ids, std::vector<std::string>{"a"});
  EXPECT_EQ(scheduled_for(out, "a"), 0);
  EXPECT_EQ(d.scheduler.find_request("a"), nullptr);
}

TEST(Scheduler, RefusesRequestsThatCouldNeverComplete) {
  EngineConfig cfg = small_config();
  cfg.cache.num_blocks = 17;  // 16 usable blocks of 4
  cfg.scheduler.max_model_len = 64;
  Scheduler s(cfg);
  EXPECT_THROW(s.add_request(make_request("too-long", 60, 5)), RequestRejected);
  try {
    s.add_request(make_request("too-long", 60, 5));
  } catch (const RequestRejected& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds max_model_len (64)"), std::string::npos);
  }
  EXPECT_THROW(s.add_request(make_request("empty", 0, 5)), RequestRejected);
  EXPECT_THROW(s.add_request(make_request("zero", 4, 0)), RequestRejected);
  s.add_request(make_request("ok", 60, 4));
  EXPECT_THROW(s.add_request(make_request("ok", 4, 4)), RequestRejected);  // duplicate id
  EXPECT_TRUE(s.has_unfinished_requests());
  EXPECT_EQ(s.num_waiting(), 1);
}

TEST(Scheduler, RefusesConfigurationsThatCannotWork) {
  EngineConfig cfg = small_config();
  cfg.scheduler.enable_chunked_prefill = false;
  cfg.scheduler.max_num_batched_tokens = 32;  // < max_model_len 64
  EXPECT_THROW(Scheduler{cfg}, ConfigError);
  cfg = small_config();
  cfg.cache.num_blocks = 10;  // 9 usable blocks < 16 for one 64-token request
  EXPECT_THROW(Scheduler{cfg}, ConfigError);
  cfg = small_config();
  cfg.cache.block_size = 0;
  EXPECT_THROW(Scheduler{cfg}, ConfigError);
  cfg = small_config();
  cfg.scheduler.max_num_seqs = 32;  // > budget of 16
  EXPECT_THROW(Scheduler{cfg}, ConfigError);
}

TEST(Scheduler, PrefixCachingReusesASharedPromptAcrossRequests) {
  EngineConfig cfg = small_config();
  cfg.cache.enable_prefix_caching = true;
  SchedulerDriver d(cfg);
  d.scheduler.add_request(make_request("first", 13, 2));
  d.run_to_completion();
  d.scheduler.add_request(make_request("second", 13, 2));
  const auto& out = d.step();
  ASSERT_EQ(out.scheduled_new_reqs.size(), 1u);
  EXPECT_EQ(out.scheduled_new_reqs[0].num_computed_tokens, 12);
  EXPECT_EQ(scheduled_for(out, "second"), 1);
  d.run_to_completion();
  EXPECT_EQ(d.tokens["second"], expected_tokens(13, 2));
}

TEST(CacheConfig, DerivesNumBlocksFromAMemoryBudget) {
  CacheConfig c;
  c.kv_cache_memory_bytes = 1 << 20;
  c.resolve_num_blocks(4096);
  EXPECT_EQ(c.num_blocks, 256);
  CacheConfig none;
  EXPECT_THROW(none.resolve_num_blocks(4096), ConfigError);
}

}  // namespace
}  // namespace pagedllm
