// With a vocabulary large enough, a batch's rows are sampled on several threads. A seeded
// request must still draw the same tokens batched as alone, whatever thread sampled its row.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cli/cli_runner.h"
#include "pagedllm/engine.h"
#include "sanitizer_build.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

// The sanitizer run checks memory with a lighter batch: 8 requests of 4 tokens, not 16 of 8.
#ifdef PAGEDLLM_TEST_ASAN
constexpr int kRequests = 8, kTokens = 4;
#else
constexpr int kRequests = 16, kTokens = 8;
#endif

TEST(ParallelSampling, SeededRowsDrawTheSameTokensBatchedAsAlone) {
  const std::string model = test::temp_path("llama-110m-f32.gguf");
  ASSERT_EQ(test::run_cli("make-model --preset llama-110m --out " + model).code, 0);
  EngineOptions o;
  o.model = model;
  o.threads = 2;
  o.max_model_len = 64;
  o.max_num_seqs = 16;
  o.num_blocks = 16 * 4 + 1;
  Engine engine(o);
  ASSERT_GE(engine.vocab_size(), 16384);  // the parallel path's threshold

  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
  for (int k = 0; k < kRequests; ++k) {
    prompts.push_back({1, 100 + k, 2000 + 7 * k});
    SamplingParams p;
    p.temperature = 0.9f;
    p.top_p = k % 2 ? 0.9f : 1.0f;
    p.top_k = k % 3 == 0 ? 40 : 0;
    p.seed = 1000 + static_cast<uint64_t>(k);
    p.max_tokens = kTokens;
    p.ignore_eos = true;
    params.push_back(p);
  }
  std::vector<std::vector<int32_t>> alone;
  for (int k = 0; k < kRequests; ++k) {
    alone.push_back(
        engine.generate({prompts[static_cast<size_t>(k)]}, params[static_cast<size_t>(k)])[0]
            .token_ids);
  }
  for (int k = 0; k < kRequests; ++k) {
    engine.add_request(prompts[static_cast<size_t>(k)], params[static_cast<size_t>(k)],
                       "r" + std::to_string(k));
  }
  std::map<std::string, std::vector<int32_t>> together;
  while (engine.has_unfinished_requests()) {
    for (const RequestOutput& out : engine.step()) {
      if (out.finished) together[out.request_id] = out.token_ids;
    }
  }
  std::set<std::vector<int32_t>> distinct;
  for (int k = 0; k < kRequests; ++k) {
    EXPECT_EQ(together["r" + std::to_string(k)], alone[static_cast<size_t>(k)]) << "request " << k;
    distinct.insert(alone[static_cast<size_t>(k)]);
  }
  EXPECT_GT(distinct.size(), size_t{kRequests / 2});  // the draws differ between requests
}

}  // namespace
}  // namespace pagedllm
