// The 8-bit KV caches on the shared trained models, against the f32 cache:
// - fp8 (--kv-cache-dtype fp8, vLLM's E4M3 with unit scales): a quarter of f32's bytes per
//   token, so the same budget holds four times the tokens. E4M3 keeps 3 mantissa bits, so where
//   the two best tokens are close the greedy choice may flip. Measured (2026-11-26): the first
//   difference from the known output comes at token 106 of 200 for stories260K (0.03 apart),
//   128 of 200 for babyllama (0.02) and 71 of 120 for aidreams260K (0.26).
// - q8_0 (llama.cpp's form): 8-bit codes and an f16 scale per 32 elements of a head vector (per
//   head here: these models' heads have 8, 16 and 16 elements), so a token costs
//   head_size + 2 bytes per head where f32 costs 4 head_size.
// Greedy decoding must follow the models' known outputs up to a near tie: the first token that
// differs must be one whose log-probability under the 8-bit cache is within 0.3 of the known
// token's, and the f32 cache must give the known output exactly.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "pagedllm/engine.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

struct SharedModel {
  const char* dir;
  const char* file;
  const char* tokenizer;
};

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Greedy outputs of the three shared models with the kv_dtype cache follow their known tokens
// (as above), and the pool holds pool_ratio(head size) times the f32 cache's tokens.
template <typename Ratio>
void ExpectKnownGreedyOutputs(const std::string& kv_dtype, Ratio pool_ratio) {
  for (const SharedModel m : {SharedModel{"stories260K", "stories260K.gguf", ""},
                              SharedModel{"babyllama", "model5000.bin", "tok105.bin"},
                              SharedModel{"aidreams260K", "aidreams260K.bin", "tok512.bin"}}) {
    std::ifstream in(test::model_path(std::string(m.dir) + "/expected.json"));
    const auto doc = nlohmann::json::parse(in);
    const auto prompt = doc["prompt_ids"].get<std::vector<int32_t>>();
    const auto want = doc["greedy_ids"].get<std::vector<int32_t>>();
    const int head_size = doc["config"]["dim"].get<int>() / doc["config"]["n_heads"].get<int>();
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = static_cast<int>(want.size());
    p.ignore_eos = true;
    p.logprobs = 5;
    size_t agree[2] = {};
    RequestOutput eight_bit_out;
    int64_t pool_tokens[2] = {};
    for (int eight_bit = 0; eight_bit < 2; ++eight_bit) {
      EngineOptions o;
      o.model = test::model_path(std::string(m.dir) + "/" + m.file);
      if (m.tokenizer[0]) o.tokenizer = test::model_path(std::string(m.dir) + "/" + m.tokenizer);
      o.kv_cache_dtype = eight_bit ? kv_dtype : "f32";
      o.kv_cache_memory_gib = 0.01;
      o.max_num_seqs = 256;
      Engine engine(o);
      pool_tokens[eight_bit] = engine.kv_cache_tokens();
      RequestOutput out = engine.generate({prompt}, p)[0];
      agree[eight_bit] = common_prefix(out.token_ids, want);
      if (eight_bit) eight_bit_out = std::move(out);
    }
    std::cout << m.dir << ": " << kv_dtype << " KV follows " << agree[1] << " of " << want.size()
              << " known greedy tokens (f32: " << agree[0] << ")\n";
    EXPECT_EQ(agree[0], want.size()) << m.dir;
    if (agree[1] < want.size()) {
      const SampledToken& at = eight_bit_out.logprobs[agree[1]];
      float known = -1e9f;
      for (const TokenLogprob& t : at.top_logprobs)
        if (t.token_id == want[agree[1]]) known = t.logprob;
      std::cout << "  the first difference: " << at.logprob << " against the known token's "
                << known << "\n";
      EXPECT_LT(at.logprob - known, 0.3f) << m.dir << ": not a near tie at " << agree[1];
    }
    const double ratio = static_cast<double>(pool_tokens[1]) / static_cast<double>(pool_tokens[0]);
    EXPECT_NEAR(ratio, pool_ratio(head_size), 0.1) << m.dir;
  }
}

TEST(EightBitKvCache, Fp8GreedyOutputsOfTheSharedModelsFollowTheirKnownTokens) {
  ExpectKnownGreedyOutputs("fp8", [](int) { return 4.0; });
}

TEST(EightBitKvCache, Q8_0GreedyOutputsOfTheSharedModelsFollowTheirKnownTokens) {
  ExpectKnownGreedyOutputs("q8_0", [](int head_size) {
    const int scales = (head_size + 31) / 32;
    return 4.0 * head_size / (head_size + 2 * scales);
  });
}

}  // namespace
}  // namespace pagedllm
