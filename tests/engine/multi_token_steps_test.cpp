// Several tokens per request per step, before anything in the engine produces them: a stand-in
// executor returns 1 to 4 tokens for each request whose prompt is done (the tokens of the
// stand-in rule, as a step that accepted drafts would), and the scheduler must append them in
// order, stop at exactly the token that ends a request (max_tokens, a stop token, EOS, with
// min_tokens respected), drop what follows, and keep its KV accounting whole.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <unordered_map>

#include "engine/engine_core.h"
#include "executor/executor.h"
#include "model/stand_in_model.h"

namespace pagedllm {
namespace {

constexpr int kVocab = 61;

class MultiTokenStandInExecutor : public Executor {
 public:
  explicit MultiTokenStandInExecutor(uint32_t seed) : rng_(seed) {}

  void execute_model(const SchedulerOutput& out, ModelRunnerOutput& result) override {
    for (const auto& id : out.finished_req_ids) known_tokens_.erase(id);
    std::unordered_map<std::string, int> computed;
    for (const auto& n : out.scheduled_new_reqs) {
      known_tokens_[n.req_id] = static_cast<int>(n.prompt_token_ids.size());
      computed[n.req_id] = n.num_computed_tokens;
    }
    for (const auto& c : out.scheduled_cached_reqs) computed[c.req_id] = c.num_computed_tokens;
    result.resize(out.num_scheduled_tokens.size());
    for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
      const auto& [id, n] = out.num_scheduled_tokens[k];
      result.req_ids[k] = id;
      int& known = known_tokens_.at(id);
      if (computed.at(id) + n < known) continue;  // a partial prefill samples nothing
      const int count = std::uniform_int_distribution<int>(1, 4)(rng_);
      for (int j = 0; j < count; ++j) {
        const int32_t token = StandInModel::next_token(known - 1, kVocab);
        result.sampled_token_ids[k].push_back(token);
        result.sampled[k].push_back({token, -0.5f * static_cast<float>(j), {}});
        ++known;
      }
      tokens_returned_ += count;
    }
  }

  int64_t tokens_returned() const { return tokens_returned_; }

 private:
  std::mt19937 rng_;
  std::unordered_map<std::string, int> known_tokens_;
  int64_t tokens_returned_ = 0;
};

struct Planned {
  std::string id;
  std::vector<int32_t> prompt;
  SamplingParams params;
  std::optional<int32_t> eos;
};

// What the request must produce, from the rule alone: the rule's tokens up to the first that
// ends it. As in vLLM, reaching max_tokens is checked first, and a stop only counts once
// min_tokens are out.
std::pair<std::vector<int32_t>, FinishReason> expected(const Planned& r) {
  std::vector<int32_t> tokens;
  const int p = static_cast<int>(r.prompt.size());
  for (int k = 0; k < r.params.max_tokens; ++k) {
    const int32_t t = StandInModel::next_token(p - 1 + k, kVocab);
    tokens.push_back(t);
    if (static_cast<int>(tokens.size()) == r.params.max_tokens) break;
    if (static_cast<int>(tokens.size()) < r.params.min_tokens) continue;
    const bool stop_id = std::find(r.params.stop_token_ids.begin(), r.params.stop_token_ids.end(),
                                   t) != r.params.stop_token_ids.end();
    if ((r.eos && t == *r.eos) || stop_id) return {tokens, FinishReason::kStop};
  }
  return {tokens, FinishReason::kLength};
}

TEST(MultiTokenSteps, ScheduledTokensAppendInOrderAndStopAtTheTokenThatEndsTheRequest) {
  int64_t stopped_mid_list = 0, lengths = 0, multi = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    EngineConfig cfg;
    cfg.cache.block_size = pick(1, 8);
    cfg.scheduler.max_model_len = 48;
    cfg.scheduler.max_num_seqs = pick(1, 6);
    cfg.scheduler.max_num_batched_tokens = pick(8, 64);
    cfg.cache.enable_prefix_caching = pick(0, 1) == 1;
    // Small pools preempt, and resumed requests must keep their appended tokens.
    cfg.cache.num_blocks = cfg.max_num_blocks_per_req() + 1 + pick(0, 12);
    auto executor = std::make_unique<MultiTokenStandInExecutor>(seed);
    const MultiTokenStandInExecutor& stand_in = *executor;
    EngineCore engine(cfg, std::move(executor));
    std::vector<Planned> planned;
    for (int i = pick(1, 6); i > 0; --i) {
      Planned r{"r" + std::to_string(i), {}, {}, std::nullopt};
      for (int t = pick(1, 20); t > 0; --t) r.prompt.push_back(pick(0, kVocab - 1));
      r.params.max_tokens = pick(1, 24);
      r.params.min_tokens = pick(0, r.params.max_tokens);
      r.params.temperature = 0.0f;
      if (pick(0, 1)) r.params.stop_token_ids = {pick(0, kVocab - 1), pick(0, kVocab - 1)};
      if (pick(0, 1)) r.eos = pick(0, kVocab - 1);
      engine.add_request(std::make_unique<Request>(r.id, r.prompt, r.params, r.eos));
      planned.push_back(r);
    }
    std::map<std::string, std::vector<int32_t>> tokens;
    std::map<std::string, std::vector<float>> logprobs;
    std::map<std::string, FinishReason> reasons;
    for (int step = 0; engine.has_unfinished_requests(); ++step) {
      ASSERT_LT(step, 2000) << "seed " << seed;
      for (const auto& o : engine.step()) {
        auto& t = tokens[o.req_id];
        t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
        if (o.new_token_ids.size() > 1) ++multi;
        if (o.finish_reason) reasons[o.req_id] = *o.finish_reason;
      }
    }
    for (const Planned& r : planned) {
      const auto [want, reason] = expected(r);
      ASSERT_EQ(tokens[r.id], want) << "seed " << seed << " " << r.id;
      ASSERT_EQ(reasons.at(r.id), reason) << "seed " << seed << " " << r.id;
      if (reason == FinishReason::kStop && static_cast<int>(want.size()) < r.params.max_tokens) {
        ++stopped_mid_list;
      } else {
        ++lengths;
      }
    }
    const auto& kv = engine.scheduler().kv_cache_manager();
    ASSERT_EQ(kv.num_free_blocks(), cfg.cache.num_blocks - 1) << "seed " << seed << ": leaked";
    ASSERT_GT(stand_in.tokens_returned(), 0);
  }
  // The generator must reach every case: lists of several tokens, stops and length caps.
  EXPECT_GT(multi, 500);
  EXPECT_GT(stopped_mid_list, 100);
  EXPECT_GT(lengths, 100);
}

// Logprobs travel with their tokens, and the dropped tail takes its logprobs with it.
TEST(MultiTokenSteps, LogprobsStayAlignedWithTheAppendedTokens) {
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.scheduler.max_model_len = 32;
  cfg.scheduler.max_num_seqs = 2;
  cfg.scheduler.max_num_batched_tokens = 32;
  cfg.cache.num_blocks = 17;
  EngineCore engine(cfg, std::make_unique<MultiTokenStandInExecutor>(3));
  SamplingParams p;
  p.max_tokens = 7;
  p.temperature = 0.0f;
  p.logprobs = 0;
  engine.add_request(std::make_unique<Request>("a", std::vector<int32_t>{1, 2, 3}, p));
  std::vector<int32_t> tokens;
  std::vector<SampledToken> lp;
  while (engine.has_unfinished_requests()) {
    for (const auto& o : engine.step()) {
      ASSERT_EQ(o.logprobs.size(), o.new_token_ids.size());
      for (size_t j = 0; j < o.new_token_ids.size(); ++j) {
        EXPECT_EQ(o.logprobs[j].token_id, o.new_token_ids[j]);
        // The stand-in gives the j-th token of each list the logprob -0.5 j.
        EXPECT_EQ(o.logprobs[j].logprob, -0.5f * static_cast<float>(j));
      }
      tokens.insert(tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    }
  }
  EXPECT_EQ(tokens.size(), 7u);
}

}  // namespace
}  // namespace pagedllm
