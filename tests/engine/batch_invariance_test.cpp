// Batch invariance, a promise pagedllm makes: a request's greedy tokens do not depend on what it
// is batched with, how its prompt is chunked, the block size, preemption or prefix caching.
// Checked on the shared trained models with f32 KV. (bf16 weights keep it only on the native
// matmul backend: oneDNN's AMX products, gemm_onednn.h, add in a batch-dependent order.)
#include <gtest/gtest.h>

#include <random>

#include "pagedllm/engine.h"
#include "sanitizer_build.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

// The sanitizer run checks memory, not every batch: 16 prompts there, 64 here.
#ifdef PAGEDLLM_TEST_ASAN
constexpr int kPrompts = 16;
#else
constexpr int kPrompts = 64;
#endif

struct ModelCase {
  const char* name;
  const char* model;
  const char* tokenizer;
};

class BatchInvariance : public ::testing::TestWithParam<ModelCase> {
 protected:
  EngineOptions base_options() const {
    EngineOptions o;
    o.model = test::model_path(GetParam().model);
    if (GetParam().tokenizer[0]) o.tokenizer = test::model_path(GetParam().tokenizer);
    o.max_model_len = 128;
    o.max_num_seqs = 64;
    o.max_num_batched_tokens = 512;
    o.num_blocks = 64 * 8 + 1;
    return o;
  }

  // kPrompts distinct prompts; with a shared prefix when asked (for prefix caching).
  std::vector<Ids> prompts(int vocab, bool shared_prefix) const {
    std::mt19937 rng(42);
    Ids prefix = {1};
    for (int i = 0; i < 40; ++i) prefix.push_back(static_cast<int32_t>(3 + rng() % (vocab - 3)));
    std::vector<Ids> out;
    for (int k = 0; k < kPrompts; ++k) {
      Ids p = shared_prefix ? Ids(prefix.begin(), prefix.begin() + 1 + (k % 5) * 8) : Ids{1};
      const int extra = 1 + static_cast<int>(rng() % 30);
      for (int i = 0; i < extra; ++i) p.push_back(static_cast<int32_t>(3 + rng() % (vocab - 3)));
      out.push_back(std::move(p));
    }
    return out;
  }

  static SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 24;
    p.ignore_eos = true;
    return p;
  }

  static std::vector<Ids> tokens_of(const std::vector<RequestOutput>& outs) {
    std::vector<Ids> t;
    for (const auto& o : outs) t.push_back(o.token_ids);
    return t;
  }

  std::vector<Ids> run_alone(const std::vector<Ids>& ps) const {
    std::vector<Ids> out;
    for (const auto& p : ps) {
      Engine e(base_options());
      out.push_back(e.generate(std::vector<Ids>{p}, greedy())[0].token_ids);
    }
    return out;
  }
};

TEST_P(BatchInvariance, SameGreedyTokensHoweverRequestsAreBatched) {
  int vocab;
  {
    Engine probe(base_options());
    vocab = probe.vocab_size();
  }
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared prefixes" : "distinct prompts");
    const auto ps = prompts(vocab, shared);
    const auto alone = run_alone(ps);

    auto together = [&](EngineOptions o, EngineStats* stats = nullptr) {
      Engine e(o);
      auto t = tokens_of(e.generate(ps, greedy()));
      if (stats) *stats = e.stats();
      return t;
    };
    EngineOptions o = base_options();
    EXPECT_EQ(together(o), alone) << "among " << kPrompts - 1 << " others";

    o = base_options();
    o.max_num_batched_tokens = 16;
    o.max_num_seqs = 16;
    EXPECT_EQ(together(o), alone) << "budget 16 (chunked prefill)";

    for (int block_size : {1, 32}) {
      o = base_options();
      o.block_size = block_size;
      o.num_blocks = 64 * (128 / block_size) + 1;
      EXPECT_EQ(together(o), alone) << "block size " << block_size;
    }

    o = base_options();
    o.num_blocks = 8 + 1 + 4;  // one full-length request and a little more
    EngineStats stats;
    EXPECT_EQ(together(o, &stats), alone) << "tiny pool";
    EXPECT_GT(stats.num_preemptions, 0) << "the tiny pool must force preemption";

    o = base_options();
    o.enable_prefix_caching = false;
    EXPECT_EQ(together(o, &stats), alone) << "prefix caching off";
    EXPECT_EQ(stats.prefix_cache_hits, 0);
    o.enable_prefix_caching = true;
    EXPECT_EQ(together(o, &stats), alone) << "prefix caching on";
    if (shared) {
      EXPECT_GT(stats.prefix_cache_hits, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, BatchInvariance,
    ::testing::Values(ModelCase{"stories260K_gguf", "stories260K/stories260K.gguf", ""},
                      ModelCase{"babyllama", "babyllama/model5000.bin", "babyllama/tok105.bin"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace pagedllm
