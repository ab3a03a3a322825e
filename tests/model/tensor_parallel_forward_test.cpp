// The sharded forward pass without MPI: N shards of a model (loader/weight_shard.h), each on its
// own thread and summing their row-parallel products through an in-process all-reduce, give
// the logits of the whole model (the additions' order differs, so within 1e-4, not bit-exact).
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <memory>
#include <thread>

#include "loader/load_model.h"
#include "loader/model_export.h"
#include "loader/weight_shard.h"
#include "model/model_factory.h"
#include "model/presets.h"
#include "model/tensor_parallel.h"
#include "test_paths.h"
#include "worker/model_runner.h"

namespace pagedllm {
namespace {

// Threads that sum their buffers: each adds every rank's buffer in rank order, so all get the
// same sum, as MPI_Allreduce gives. gather() puts every rank's floats after the last rank's on
// rank 0, as MPI_Gatherv does.
class ThreadAllReduce {
 public:
  explicit ThreadAllReduce(int ranks)
      : barrier_(ranks),
        buffers_(static_cast<size_t>(ranks)),
        sums_(buffers_.size()),
        counts_(buffers_.size()) {}

  void gather(int rank, const float* mine, size_t count, std::vector<float>& all) {
    const auto me = static_cast<size_t>(rank);
    buffers_[me] = const_cast<float*>(mine);
    counts_[me] = count;
    barrier_.arrive_and_wait();
    if (rank == 0) {
      all.clear();
      for (size_t r = 0; r < buffers_.size(); ++r)
        all.insert(all.end(), buffers_[r], buffers_[r] + counts_[r]);
    }
    barrier_.arrive_and_wait();  // rank 0 has read every buffer
  }

  void operator()(int rank, float* data, size_t count) {
    const auto me = static_cast<size_t>(rank);
    buffers_[me] = data;
    barrier_.arrive_and_wait();
    sums_[me].assign(count, 0.0f);
    for (const float* b : buffers_)
      for (size_t i = 0; i < count; ++i) sums_[me][i] += b[i];
    barrier_.arrive_and_wait();  // every rank has read every buffer
    std::copy(sums_[me].begin(), sums_[me].end(), data);
  }

 private:
  std::barrier<> barrier_;
  std::vector<float*> buffers_;
  std::vector<std::vector<float>> sums_;
  std::vector<size_t> counts_;
};

ModelInputs prefill_inputs(ModelRunner& runner, const std::vector<int32_t>& prompt) {
  SchedulerOutput out;
  out.scheduled_new_reqs.push_back(
      {"r", prompt, SamplingParams{}, {1, 2, 3, 4}, 0, std::nullopt, {}});
  const int n = static_cast<int>(prompt.size());
  out.num_scheduled_tokens.push_back({"r", n});
  out.total_num_scheduled_tokens = n;
  runner.update_states(out);
  return runner.prepare_inputs();
}

EngineConfig small_config() {
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.cache.num_blocks = 16;
  cfg.scheduler.max_model_len = 32;
  cfg.scheduler.max_num_batched_tokens = 32;
  cfg.scheduler.max_num_seqs = 2;
  return cfg;
}

// Logits of the last prompt token from the whole model, or from `ranks` shards on threads.
std::vector<float> last_logits(const std::string& path, int ranks) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 9, 77, 300, 12, 41};
  const EngineConfig cfg = small_config();
  ModelRunner runner(cfg);
  const ModelInputs in = prefill_inputs(runner, prompt);
  ThreadAllReduce reduce(ranks);
  std::vector<float> logits;
  auto run_rank = [&](int rank) {
    ModelWeights w = shard_weights(load_model(path), rank, ranks);
    const int vocab = w.config.vocab_size;
    auto weights = std::make_shared<const ModelWeights>(std::move(w));
    TensorParallelShard shard;
    std::vector<float> gathered;
    if (ranks > 1) {
      shard.all_reduce = [&reduce, rank](float* d, size_t n) { reduce(rank, d, n); };
      shard.gather_logits = [&, rank, vocab](const float* mine, int rows, std::span<float> whole) {
        const size_t count = static_cast<size_t>(rows) * vocab_share(vocab, rank, ranks).count;
        reduce.gather(rank, mine, count, gathered);
        if (rank == 0) place_vocab_shares(gathered.data(), rows, vocab, ranks, whole);
      };
    }
    auto model = create_model(weights, {32, {}}, shard);
    PagedKVCache cache(model->kv_cache_spec(16, 4, DType::kF32));
    model->bind_kv_cache(cache);
    std::vector<float> out(rank == 0 ? static_cast<size_t>(model->vocab_size()) : 0);
    model->forward(in, out);
    if (rank == 0) logits = std::move(out);
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < ranks; ++r) threads.emplace_back(run_rank, r);
  run_rank(0);
  for (auto& t : threads) t.join();
  return logits;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  float max_diff = 0.0f;
  for (size_t i = 0; i < want.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
  EXPECT_LE(max_diff, 1e-4f);
}

TEST(TensorParallelForward, VocabSharesArePlacedSideBySideInEachRow) {
  // Vocab 5 over 2 ranks (tokens 0-1 and 2-4), 2 rows, as the gather leaves them.
  const std::vector<float> gathered = {0, 1, 10, 11, 2, 3, 4, 12, 13, 14};
  std::vector<float> whole(10, -1.0f);
  place_vocab_shares(gathered.data(), 2, 5, 2, whole);
  EXPECT_EQ(whole, (std::vector<float>{0, 1, 2, 3, 4, 10, 11, 12, 13, 14}));
  EXPECT_THROW(place_vocab_shares(gathered.data(), 2, 5, 2, std::span<float>(whole).first(9)),
               std::length_error);
}

TEST(TensorParallelForward, TwoAndFourShardsGiveTheWholeModelsLogits) {
  const std::string path = test::model_path("stories260K/stories260K.gguf");
  const std::vector<float> whole = last_logits(path, 1);
  expect_close(last_logits(path, 2), whole);
  expect_close(last_logits(path, 4), whole);
}

// QKV biases (Qwen2), Q/K norms with a head size apart from dim / heads (Qwen3), tied
// embeddings with Llama 3 RoPE scaling and 4 query heads per KV head (tiny-llama3).
class TensorParallelArchitectures : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorParallelArchitectures, TwoShardsGiveTheWholeModelsLogits) {
  ExportSpec spec;
  spec.config = preset_config(GetParam());
  spec.source_rope = RopeStyle::kInterleaved;
  spec.vocab = synthetic_vocab(spec.config.vocab_size);
  const std::string path = test::temp_path("tp-forward-" + GetParam() + ".gguf");
  export_gguf(spec, random_weights(spec.config, 7), path);
  expect_close(last_logits(path, 2), last_logits(path, 1));
}

INSTANTIATE_TEST_SUITE_P(Presets, TensorParallelArchitectures,
                         ::testing::Values("tiny-qwen2", "tiny-qwen3", "tiny-llama3"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(TensorParallelForward, QuantizedShardsSplitOnBlockBoundariesGiveTheSameLogits) {
  ExportSpec spec;
  spec.config = preset_config("tiny");
  spec.config.n_heads = 4, spec.config.n_kv_heads = 4;
  spec.dtype = DType::kQ8_0;
  spec.source_rope = RopeStyle::kInterleaved;
  spec.vocab = synthetic_vocab(spec.config.vocab_size);
  const std::string path = test::temp_path("tp-forward-q8.gguf");
  export_gguf(spec, random_weights(spec.config, 5), path);
  const std::vector<float> whole = last_logits(path, 1);
  expect_close(last_logits(path, 2), whole);
}

}  // namespace
}  // namespace pagedllm
