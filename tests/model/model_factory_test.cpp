// The model factory and the forward contract: a model is built by architecture and says what
// KV cache it needs; a forward pass gives logits for any number of rows per request, takes
// input embeddings in place of chosen token rows, and refuses positions it cannot use.
#include "model/model_factory.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "format/dequant.h"
#include "loader/load_model.h"
#include "model/llama_model.h"
#include "test_paths.h"
#include "worker/model_runner.h"

namespace pagedllm {
namespace {

std::shared_ptr<const ModelWeights> stories260k() {
  return std::make_shared<const ModelWeights>(
      load_model(test::model_path("stories260K/stories260K.gguf")));
}

TEST(ModelFactory, BuildsTheModelOfTheCheckpointsArchitectureAndItNamesItsKVCache) {
  auto weights = stories260k();
  const ModelConfig& c = weights->config;
  std::unique_ptr<Model> model = create_model(weights, {64, {}});
  ASSERT_NE(dynamic_cast<LlamaModel*>(model.get()), nullptr);
  EXPECT_EQ(model->vocab_size(), 512);
  const KVCacheSpec spec = model->kv_cache_spec(10, 16, DType::kBF16);
  EXPECT_EQ(spec.num_layers, c.n_layers);
  EXPECT_EQ(spec.num_kv_heads, c.n_kv_heads);
  EXPECT_EQ(spec.head_size, c.head_dim);
  EXPECT_EQ(spec.num_blocks, 10);
  EXPECT_EQ(spec.block_size, 16);
  EXPECT_EQ(spec.dtype, DType::kBF16);
  const KVCacheSpec before = model_kv_cache_spec(*weights, 10, 16, DType::kBF16);
  EXPECT_EQ(before.bytes_per_block(), spec.bytes_per_block());
  EXPECT_GT(model->linear_weight_bytes(), 0u);
}

TEST(ModelFactory, RefusesAnArchitectureNoModelImplements) {
  auto weights =
      std::make_shared<ModelWeights>(load_model(test::model_path("stories260K/stories260K.gguf")));
  weights->config.architecture = "mamba";
  try {
    create_model(weights, {64, {}});
    FAIL() << "expected ModelLoadError";
  } catch (const ModelLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("'mamba'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llama, qwen2, qwen3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(model_kv_cache_spec(*weights, 4, 16, DType::kF32), ModelLoadError);
}

TEST(ModelFactory, ABoundModelRefusesACacheOfAnotherGeometry) {
  auto model = create_model(stories260k(), {64, {}});
  KVCacheSpec wrong = model->kv_cache_spec(4, 16, DType::kF32);
  wrong.num_kv_heads += 1;
  PagedKVCache cache(wrong);
  EXPECT_THROW(model->bind_kv_cache(cache), std::invalid_argument);
}

// One prefill of `prompt` through the runner, for inputs to edit before the forward pass.
class OneRequestForward : public ::testing::Test {
 protected:
  void SetUp() override {
    weights_ = stories260k();
    cfg_.cache.block_size = 4;
    cfg_.cache.num_blocks = 16;
    cfg_.scheduler.max_model_len = 32;
    cfg_.scheduler.max_num_batched_tokens = 32;
    cfg_.scheduler.max_num_seqs = 2;
    model_ = create_model(weights_, {32, {}});
    cache_ = std::make_unique<PagedKVCache>(model_->kv_cache_spec(16, 4, DType::kF32));
    model_->bind_kv_cache(*cache_);
  }

  ModelInputs prepare(const std::vector<int32_t>& prompt) {
    runner_ = std::make_unique<ModelRunner>(cfg_);
    SchedulerOutput out;
    out.scheduled_new_reqs.push_back(
        {"r", prompt, SamplingParams{}, {1, 2, 3}, 0, std::nullopt, {}});
    const int n = static_cast<int>(prompt.size());
    out.num_scheduled_tokens.push_back({"r", n});
    out.total_num_scheduled_tokens = n;
    runner_->update_states(out);
    return runner_->prepare_inputs();
  }

  std::vector<float> forward(const ModelInputs& in) {
    std::vector<float> logits(static_cast<size_t>(in.num_logits) * 512);
    model_->forward(in, logits);
    return logits;
  }

  std::shared_ptr<const ModelWeights> weights_;
  EngineConfig cfg_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PagedKVCache> cache_;
  std::unique_ptr<ModelRunner> runner_;
};

TEST_F(OneRequestForward, EveryTokenOfARequestCanHaveItsLogitsRowBitForBit) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  ModelInputs all = prepare(prompt);
  ASSERT_EQ(all.num_logits, 1);
  for (int t = 0; t < 5; ++t) all.logits_indices[static_cast<size_t>(t)] = t;
  all.num_logits = 5;
  all.logits_start_loc[1] = 5;
  const std::vector<float> rows = forward(all);
  // Row t must be the last-token logits of the prompt cut after token t.
  for (int t = 0; t < 5; ++t) {
    const std::vector<int32_t> cut(prompt.begin(), prompt.begin() + t + 1);
    const std::vector<float> last = forward(prepare(cut));
    ASSERT_EQ(last.size(), 512u);
    for (size_t v = 0; v < 512; ++v) {
      ASSERT_EQ(rows[static_cast<size_t>(t) * 512 + v], last[v]) << "token " << t << " logit " << v;
    }
  }
}

TEST_F(OneRequestForward, InputEmbeddingsReplaceTheTokenRowsTheyName) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const std::vector<float> want = forward(prepare(prompt));
  // Token 2 becomes a placeholder id; its row gets token 407's embedding from the side.
  std::vector<int32_t> placeholder = prompt;
  placeholder[2] = 0;
  ModelInputs in = prepare(placeholder);
  const int dim = weights_->config.dim;
  std::vector<float> values(static_cast<size_t>(dim));
  const WeightMatrix& e = weights_->token_embedding;
  dequantize_row(e.dtype, e.row(407), values.data(), dim);
  const std::vector<int32_t> rows = {2};
  const std::vector<float> unchanged = forward(in);
  EXPECT_NE(unchanged, want) << "the placeholder alone must change the answer";
  in.embed_rows = rows;
  in.embed_values = values;
  EXPECT_EQ(forward(in), want);
}

TEST_F(OneRequestForward, BadEmbeddingsAndMRopePositionsAreRefusedByATextModel) {
  ModelInputs in = prepare({1, 2, 3});
  const std::vector<int32_t> rows = {7};
  std::vector<float> values(static_cast<size_t>(weights_->config.dim));
  in.embed_rows = rows;
  in.embed_values = values;
  EXPECT_THROW(forward(in), std::out_of_range);
  in.embed_values = std::span<const float>(values).first(3);
  EXPECT_THROW(forward(in), std::invalid_argument);
  ModelInputs m = prepare({1, 2, 3});
  m.mrope_positions.assign(3 * 32, 0);
  m.mrope_stride = 32;
  EXPECT_THROW(forward(m), std::invalid_argument);
}

}  // namespace
}  // namespace pagedllm
