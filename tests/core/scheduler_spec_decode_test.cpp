// The scheduler's side of speculative decoding: draft tokens are scheduled after a request's
// pending token within the budget, rejected drafts roll num_computed_tokens back, and only
// accepted tokens ever reach the prefix cache's hashes. A stand-in verifier accepts drafts that
// equal the stand-in model's tokens, so every request must still end with exactly the
// stand-in rule's tokens, whatever was proposed.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <numeric>
#include <random>

#include "core/scheduler.h"
#include "model/stand_in_model.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;
constexpr int kVocab = 512;

EngineConfig config(int budget, bool caching) {
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.cache.num_blocks = 96;
  cfg.cache.enable_prefix_caching = caching;
  cfg.scheduler.max_model_len = 96;
  cfg.scheduler.max_num_batched_tokens = budget;
  cfg.scheduler.max_num_seqs = std::min(6, budget);
  return cfg;
}

std::unique_ptr<Request> request(const std::string& id, Ids prompt, int max_tokens) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return std::make_unique<Request>(id, std::move(prompt), p);
}

// Verifies drafts against the stand-in rule and proposes the rule's next tokens, each wrong
// with probability `wrong`.
class SpeculatingDriver {
 public:
  SpeculatingDriver(const EngineConfig& cfg, int k, double wrong, uint32_t seed)
      : scheduler(cfg), k_(k), wrong_(wrong), rng_(seed) {}

  void step() {
    scheduler.schedule(out);
    check_schedule();
    runner_out.resize(out.num_scheduled_tokens.size());
    for (size_t i = 0; i < out.num_scheduled_tokens.size(); ++i) verify(i);
    outputs.clear();
    scheduler.update_from_output(out, runner_out, outputs);
    for (const auto& o : outputs) {
      auto& t = tokens[o.req_id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    }
    check_after_update();
  }

  Scheduler scheduler;
  SchedulerOutput out;
  ModelRunnerOutput runner_out;
  std::vector<EngineCoreOutput> outputs;
  std::map<std::string, Ids> tokens;
  int64_t drafts_scheduled = 0;

 private:
  const Ids* drafts_of(const std::string& id) const {
    for (const auto& c : out.scheduled_cached_reqs)
      if (c.req_id == id) return &c.spec_token_ids;
    return nullptr;
  }

  void check_schedule() {
    int total = 0;
    for (const auto& [id, n] : out.num_scheduled_tokens) total += n;
    EXPECT_EQ(total, out.total_num_scheduled_tokens);
    EXPECT_LE(total, scheduler.config().scheduler.max_num_batched_tokens);
    for (const auto& c : out.scheduled_cached_reqs) {
      if (c.spec_token_ids.empty()) continue;
      const Request* r = scheduler.find_request(c.req_id);
      drafts_scheduled += static_cast<int64_t>(c.spec_token_ids.size());
      EXPECT_LE(static_cast<int>(c.spec_token_ids.size()), k_);
      // Drafts never pass the last token the request may hold.
      EXPECT_LE(r->num_tokens() + static_cast<int>(c.spec_token_ids.size()),
                r->num_prompt_tokens() + r->params().max_tokens - 1);
      // Drafts come only with the pending token, never inside a prefill chunk.
      EXPECT_EQ(c.num_computed_tokens, r->num_tokens() - 1);
    }
  }

  void verify(size_t i) {
    const auto& [id, n] = out.num_scheduled_tokens[i];
    runner_out.req_ids[i] = id;
    const Request* r = scheduler.find_request(id);
    const Ids* drafts = drafts_of(id);
    const int num_drafts = drafts ? static_cast<int>(drafts->size()) : 0;
    const int known = r->num_computed_tokens - num_drafts;  // computed after this step's tokens
    if (known < r->num_tokens()) return;                    // partial prefill
    auto& sampled = runner_out.sampled_token_ids[i];
    for (int j = 0; j <= num_drafts; ++j) {
      const int32_t t = StandInModel::next_token(known - 1 + j, kVocab);
      sampled.push_back(t);
      if (j < num_drafts && (*drafts)[static_cast<size_t>(j)] != t) break;
    }
    const int next_pos = known - 1 + static_cast<int>(sampled.size());
    std::bernoulli_distribution miss(wrong_);
    auto& proposal = runner_out.spec_token_ids[i];
    for (int j = 0; j < k_; ++j) {
      const int32_t right = StandInModel::next_token(next_pos + j, kVocab);
      proposal.push_back(miss(rng_) ? (right + 1) % kVocab : right);
    }
  }

  void check_after_update() {
    const int bs = scheduler.config().cache.block_size;
    for (const Request* r : scheduler.running()) {
      EXPECT_LE(r->num_computed_tokens, r->num_tokens());
      // Hashes only ever cover blocks of real tokens.
      EXPECT_LE(static_cast<int>(r->block_hashes.size()), r->num_tokens() / bs);
      const int held = static_cast<int>(scheduler.kv_cache_manager().block_ids(*r).size());
      EXPECT_GE(held * bs, r->num_computed_tokens);
    }
  }

  int k_;
  double wrong_;
  std::mt19937 rng_;
};

Ids expected_tokens(const Ids& prompt, int max_tokens) {
  Ids t;
  for (int k = 0; k < max_tokens; ++k)
    t.push_back(StandInModel::next_token(static_cast<int>(prompt.size()) - 1 + k, kVocab));
  return t;
}

TEST(SchedulerSpecDecode, AWorkedVerifyStepRollsBackTheRejectedDrafts) {
  SpeculatingDriver d(config(64, false), 3, 0.0, 1);
  d.scheduler.add_request(request("a", {1, 2, 3, 4, 5}, 20));
  d.step();  // prefill: 5 tokens, samples one, proposes 3
  ASSERT_EQ(d.tokens["a"].size(), 1u);
  const Request* r = d.scheduler.find_request("a");
  EXPECT_EQ(r->num_computed_tokens, 5);
  ASSERT_EQ(r->spec_token_ids.size(), 3u);

  // Next step: the pending token plus 3 drafts, all right: 4 tokens out, nothing rolled back.
  d.step();
  ASSERT_EQ(d.out.num_scheduled_tokens.size(), 1u);
  EXPECT_EQ(d.out.num_scheduled_tokens[0].num_tokens, 4);
  EXPECT_EQ(d.out.scheduled_cached_reqs[0].spec_token_ids.size(), 3u);
  EXPECT_EQ(d.tokens["a"].size(), 5u);
  EXPECT_EQ(r->num_computed_tokens, 9);
  EXPECT_EQ(r->num_tokens(), 10);

  // Now the second draft is wrong: the first is kept, the target's token replaces the second,
  // and num_computed_tokens steps back over the two drafts computed for nothing.
  Request* mutable_r = const_cast<Request*>(r);
  mutable_r->spec_token_ids[1] = (mutable_r->spec_token_ids[1] + 7) % kVocab;
  d.step();
  EXPECT_EQ(d.tokens["a"].size(), 7u);
  EXPECT_EQ(r->num_computed_tokens, 9 + 4 - 2);
  EXPECT_EQ(r->num_tokens(), r->num_computed_tokens + 1);
  const auto& st = d.scheduler.spec_decoding_stats();
  EXPECT_EQ(st.num_drafts, 2);
  EXPECT_EQ(st.num_draft_tokens, 6);
  EXPECT_EQ(st.num_accepted_tokens, 4);
  EXPECT_EQ(st.accepted_per_position, (std::vector<int64_t>{2, 1, 1}));
}

TEST(SchedulerSpecDecode, ATightBudgetVerifiesFewerDraftsAndMaxTokensTrimsThem) {
  SpeculatingDriver d(config(3, false), 4, 0.0, 2);
  d.scheduler.add_request(request("a", {1, 2}, 5));
  d.step();  // prefill of 2 tokens
  d.step();  // budget 3: the pending token and 2 of the 4 drafts
  EXPECT_EQ(d.out.num_scheduled_tokens[0].num_tokens, 3);
  EXPECT_EQ(d.out.scheduled_cached_reqs[0].spec_token_ids.size(), 2u);
  d.step();
  // 1 + 3 + ... tokens: the request holds 2 + 5 at most, so at most max_tokens - 1 - outputs
  // drafts were scheduled, and it ends with exactly 5 tokens.
  while (d.scheduler.has_unfinished_requests()) d.step();
  EXPECT_EQ(d.tokens["a"], expected_tokens({1, 2}, 5));
}

TEST(SchedulerSpecDecode, RandomWorkloadsEndWithTheTargetsTokensWhateverIsProposed) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 24; ++trial) {
    const bool caching = trial % 2 == 0;
    const int budget = 4 + static_cast<int>(rng() % 40);
    const int k = 1 + static_cast<int>(rng() % 5);
    const double wrong = 0.1 * static_cast<double>(rng() % 8);
    SCOPED_TRACE("trial " + std::to_string(trial) + " budget " + std::to_string(budget) + " k " +
                 std::to_string(k) + " wrong " + std::to_string(wrong));
    SpeculatingDriver d(config(budget, caching), k, wrong, static_cast<uint32_t>(trial));
    std::map<std::string, Ids> prompts;
    std::map<std::string, int> max_tokens;
    int next = 0;
    for (int step = 0; step < 400 && (next < 12 || d.scheduler.has_unfinished_requests()); ++step) {
      if (next < 12 && rng() % 3 == 0) {
        const std::string id = "r" + std::to_string(next++);
        Ids prompt = {1, 2, 3, 4, 5, 6, 7, 8};  // a shared prefix for the prefix cache
        prompt.resize(2 + rng() % 20, static_cast<int32_t>(rng() % kVocab));
        prompts[id] = prompt;
        max_tokens[id] = 1 + static_cast<int>(rng() % 40);
        d.scheduler.add_request(request(id, prompt, max_tokens[id]));
      }
      d.step();
    }
    ASSERT_FALSE(d.scheduler.has_unfinished_requests());
    for (const auto& [id, prompt] : prompts)
      EXPECT_EQ(d.tokens[id], expected_tokens(prompt, max_tokens[id])) << id;
    if (wrong < 0.5) {
      EXPECT_GT(d.drafts_scheduled, 0);
    }
    EXPECT_EQ(d.scheduler.kv_cache_manager().num_free_blocks(), 95);
  }
}

}  // namespace
}  // namespace pagedllm
