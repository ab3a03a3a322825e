// The shared models' known greedy outputs (../shared/models/*/expected.json), token for token.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/engine_core.h"
#include "kernels/kv_cache.h"
#include "loader/load_model.h"
#include "model/llama_model.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

struct Expected {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> greedy_ids;
};

Expected read_expected(const std::string& dir) {
  std::ifstream in(test::model_path(dir + "/expected.json"));
  EXPECT_TRUE(in.good()) << "missing " << test::model_path(dir + "/expected.json");
  const auto doc = nlohmann::json::parse(in);
  return {doc["prompt_ids"].get<std::vector<int32_t>>(),
          doc["greedy_ids"].get<std::vector<int32_t>>()};
}

std::vector<int32_t> generate_greedy(const std::string& path, const std::vector<int32_t>& prompt,
                                     int max_tokens) {
  auto weights = std::make_shared<const ModelWeights>(load_model(path));
  const ModelConfig& mc = weights->config;
  EngineConfig cfg;
  cfg.cache.block_size = 16;
  cfg.scheduler.max_model_len = mc.max_seq_len;
  cfg.scheduler.max_num_batched_tokens = std::max(64, mc.max_seq_len);
  cfg.scheduler.max_num_seqs = 8;
  cfg.cache.num_blocks = cfg.max_num_blocks_per_req() * 2 + 1;
  PagedKVCache cache(LlamaModel::kv_cache_spec(mc, cfg.cache.num_blocks, cfg.cache.block_size));
  LlamaModel model(weights, cache, cfg.scheduler.max_num_batched_tokens);
  EngineCore engine(cfg, model);
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.temperature = 0.0f;
  p.ignore_eos = true;
  engine.add_request(std::make_unique<Request>("r", prompt, p, mc.eos_token_id));
  std::vector<int32_t> out;
  while (engine.has_unfinished_requests()) {
    for (const auto& o : engine.step())
      out.insert(out.end(), o.new_token_ids.begin(), o.new_token_ids.end());
  }
  return out;
}

TEST(GreedyReference, Stories260KFromLlama2cCheckpoint) {
  const Expected e = read_expected("stories260K");
  EXPECT_EQ(generate_greedy(test::model_path("stories260K/stories260K.bin"), e.prompt_ids, 200),
            e.greedy_ids);
}

TEST(GreedyReference, Stories260KFromGguf) {
  const Expected e = read_expected("stories260K");
  EXPECT_EQ(generate_greedy(test::model_path("stories260K/stories260K.gguf"), e.prompt_ids, 200),
            e.greedy_ids);
}

TEST(GreedyReference, BabyLlamaWithA105TokenVocabulary) {
  const Expected e = read_expected("babyllama");
  EXPECT_EQ(generate_greedy(test::model_path("babyllama/model5000.bin"), e.prompt_ids,
                            static_cast<int>(e.greedy_ids.size())),
            e.greedy_ids);
}

TEST(GreedyReference, AiDreams260KWithPlainMultiHeadAttention) {
  const Expected e = read_expected("aidreams260K");
  ASSERT_EQ(e.greedy_ids.size(), 120u);
  EXPECT_EQ(generate_greedy(test::model_path("aidreams260K/aidreams260K.bin"), e.prompt_ids, 120),
            e.greedy_ids);
}

}  // namespace
}  // namespace pagedllm
