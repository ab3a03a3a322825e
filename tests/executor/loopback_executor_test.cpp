// The executor seam: an engine whose runner is reached only through serialized bytes (as a
// runner in another process would be) produces exactly what the in-process engine produces,
// on a real model with sampling and logprobs, and under preemption and chunked prefill.
#include "executor/loopback_executor.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "engine/engine_core.h"
#include "executor/uniproc_executor.h"
#include "loader/load_model.h"
#include "model/llama_model.h"
#include "model/stand_in_model.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

struct Output {
  std::map<std::string, std::vector<int32_t>> tokens;
  std::map<std::string, std::vector<float>> logprobs;
};

Output run(EngineCore& engine, const std::vector<std::vector<int32_t>>& prompts) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    SamplingParams p;
    p.max_tokens = 40;
    p.temperature = i % 2 ? 0.8f : 0.0f;  // greedy and seeded sampling side by side
    p.top_k = 20;
    p.seed = 100 + i;
    p.logprobs = 2;
    engine.add_request(
        std::make_unique<Request>("r" + std::to_string(i), prompts[i], p, std::nullopt));
  }
  Output out;
  while (engine.has_unfinished_requests()) {
    for (const auto& o : engine.step()) {
      auto& t = out.tokens[o.req_id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      for (const auto& lp : o.logprobs) out.logprobs[o.req_id].push_back(lp.logprob);
    }
  }
  return out;
}

TEST(LoopbackExecutor, GivesTheInProcessEnginesTokensAndLogprobsOnARealModel) {
  auto weights = std::make_shared<const ModelWeights>(
      load_model(test::model_path("stories260K/stories260K.gguf")));
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.scheduler.max_model_len = 96;
  cfg.scheduler.max_num_seqs = 4;
  cfg.scheduler.max_num_batched_tokens = 24;  // chunked prefill
  cfg.cache.num_blocks = 40;                  // tight enough to preempt
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 403, 407, 261, 378, 1},
      {1, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310},
      {1, 20, 30, 40},
      {1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
      {1, 403, 407, 261, 378, 100},
      {1, 2}};
  Output want, got;
  size_t bytes_out = 0;
  {
    PagedKVCache cache(
        LlamaModel::kv_cache_spec(weights->config, cfg.cache.num_blocks, cfg.cache.block_size));
    LlamaModel model(weights, cache, cfg.scheduler.max_num_batched_tokens);
    EngineCore engine(cfg, std::make_unique<UniProcExecutor>(cfg, model));
    want = run(engine, prompts);
    EXPECT_GT(engine.scheduler().num_preemptions_total(), 0) << "the pool should preempt";
  }
  {
    PagedKVCache cache(
        LlamaModel::kv_cache_spec(weights->config, cfg.cache.num_blocks, cfg.cache.block_size));
    LlamaModel model(weights, cache, cfg.scheduler.max_num_batched_tokens);
    auto executor = std::make_unique<LoopbackExecutor>(cfg, model);
    const LoopbackExecutor& loopback = *executor;
    EngineCore engine(cfg, std::move(executor));
    got = run(engine, prompts);
    bytes_out = loopback.bytes_to_runner();
    EXPECT_GT(loopback.bytes_from_runner(), 0u);
  }
  EXPECT_GT(bytes_out, 0u);
  ASSERT_EQ(want.tokens.size(), prompts.size());
  for (const auto& [id, tokens] : want.tokens) {
    EXPECT_EQ(got.tokens[id], tokens) << id;
    EXPECT_EQ(tokens.size(), 40u) << id;
    EXPECT_EQ(got.logprobs[id], want.logprobs[id]) << id;
  }
}

TEST(LoopbackExecutor, EngineCoreStillExposesItsInProcessRunner) {
  EngineConfig cfg;
  cfg.cache.num_blocks = 8;
  cfg.scheduler.max_model_len = 16;
  StandInModel model(32);
  EngineCore engine(cfg, std::make_unique<LoopbackExecutor>(cfg, model));
  EXPECT_EQ(&engine.runner(), engine.executor().local_runner());
}

}  // namespace
}  // namespace pagedllm
