// Property tests: thousands of random workloads (block sizes, pools small enough to preempt,
// chunking, prefix sharing, aborts), with the engine's invariants checked after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "engine/engine_core.h"
#include "model/stand_in_model.h"

namespace pagedllm {
namespace {

constexpr int kWorkloadVocab = 97;

struct PlannedRequest {
  std::string id;
  std::vector<int32_t> prompt;
  int max_tokens;
  int arrival_step;
  int abort_step;  // -1: never
  int priority;
};

struct Workload {
  EngineConfig config;
  std::vector<PlannedRequest> requests;
  std::string describe() const {
    std::ostringstream os;
    const auto& c = config;
    os << "block_size=" << c.cache.block_size << " num_blocks=" << c.cache.num_blocks
       << " max_model_len=" << c.scheduler.max_model_len
       << " budget=" << c.scheduler.max_num_batched_tokens
       << " max_num_seqs=" << c.scheduler.max_num_seqs
       << " chunked=" << c.scheduler.enable_chunked_prefill
       << " prefix_caching=" << c.cache.enable_prefix_caching
       << " threshold=" << c.scheduler.long_prefill_token_threshold
       << " partial=" << c.scheduler.max_num_partial_prefills
       << " policy=" << to_string(c.scheduler.policy) << " requests=" << requests.size();
    return os.str();
  }
};

int uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

Workload random_workload(std::mt19937& rng) {
  Workload w;
  auto& c = w.config;
  const int block_sizes[] = {1, 2, 3, 4, 8, 16};
  c.cache.block_size = block_sizes[uniform(rng, 0, 5)];
  c.scheduler.max_model_len = uniform(rng, 4, 64);
  c.scheduler.max_num_seqs = uniform(rng, 1, 8);
  c.scheduler.enable_chunked_prefill = uniform(rng, 0, 3) != 0;
  const int min_budget = c.scheduler.enable_chunked_prefill
                             ? c.scheduler.max_num_seqs
                             : std::max(c.scheduler.max_model_len, c.scheduler.max_num_seqs);
  c.scheduler.max_num_batched_tokens = uniform(rng, min_budget, min_budget + 48);
  c.scheduler.long_prefill_token_threshold = uniform(rng, 0, 2) == 0 ? uniform(rng, 1, 16) : 0;
  c.scheduler.max_num_partial_prefills = uniform(rng, 0, 3) == 0 ? uniform(rng, 1, 2) : 0;
  c.scheduler.policy =
      uniform(rng, 0, 3) == 0 ? SchedulingPolicy::kPriority : SchedulingPolicy::kFcfs;
  c.cache.enable_prefix_caching = uniform(rng, 0, 1) == 1;
  // From the smallest legal pool (forcing preemption) to a roomy one.
  const int min_blocks = c.max_num_blocks_per_req() + 1;
  c.cache.num_blocks = uniform(rng, min_blocks, min_blocks * 3);

  // A few shared bases so that prompts share prefixes.
  std::vector<std::vector<int32_t>> bases(3);
  for (auto& b : bases) {
    for (int i = 0; i < 64; ++i) b.push_back(uniform(rng, 0, kWorkloadVocab - 1));
  }
  const int num_requests = uniform(rng, 1, 12);
  for (int k = 0; k < num_requests; ++k) {
    PlannedRequest r;
    r.id = "r" + std::to_string(k);
    const int prompt_len = uniform(rng, 1, c.scheduler.max_model_len - 1);
    const auto& base = bases[static_cast<size_t>(uniform(rng, 0, 2))];
    const int shared = uniform(rng, 0, prompt_len);
    for (int i = 0; i < prompt_len; ++i) {
      r.prompt.push_back(i < shared ? base[static_cast<size_t>(i)]
                                    : uniform(rng, 0, kWorkloadVocab - 1));
    }
    r.max_tokens = uniform(rng, 1, c.scheduler.max_model_len - prompt_len);
    r.arrival_step = uniform(rng, 0, 15);
    r.abort_step = uniform(rng, 0, 9) == 0 ? r.arrival_step + uniform(rng, 0, 10) : -1;
    r.priority = uniform(rng, 0, 3);
    w.requests.push_back(std::move(r));
  }
  return w;
}

class InvariantChecker {
 public:
  InvariantChecker(const EngineCore& engine, const EngineConfig& config)
      : engine_(engine),
        cfg_(config),
        shadow_kv_(static_cast<size_t>(config.cache.num_blocks * config.cache.block_size),
                   {-1, -1}) {}

  void check_step() {
    const auto& out = engine_.last_scheduler_output();
    check_budget(out);
    check_block_ownership();
    check_ref_counts();
    if (out.total_num_scheduled_tokens > 0) {
      check_token_level();
      check_shadow_kv();
    }
  }

 private:
  void check_budget(const SchedulerOutput& out) {
    int total = 0;
    for (const auto& s : out.num_scheduled_tokens) {
      ASSERT_GT(s.num_tokens, 0);
      total += s.num_tokens;
    }
    ASSERT_EQ(total, out.total_num_scheduled_tokens);
    ASSERT_LE(total, cfg_.scheduler.max_num_batched_tokens);
    ASSERT_LE(engine_.scheduler().num_running(), cfg_.scheduler.max_num_seqs);
  }

  // Every token's slot lies in the block the request owns for that position; its input id is
  // the request's token at that position.
  void check_token_level() {
    const auto& in = engine_.runner().inputs();
    const auto& batch = engine_.runner().input_batch();
    const auto& kv = engine_.scheduler().kv_cache_manager();
    const int bs = cfg_.cache.block_size;
    for (int r = 0; r < in.num_reqs; ++r) {
      const std::string& id = batch.req_id(r);
      // Requests that finished in this step have already released their blocks to the pool;
      // the worker's copy still describes the step that ran.
      const Request* req = engine_.scheduler().find_request(id);
      const CachedRequestState* state = engine_.runner().request_state(id);
      ASSERT_NE(state, nullptr) << id;
      const auto& blocks = state->block_ids;
      if (req) {
        const auto owned = kv.block_ids(id);
        ASSERT_TRUE(std::equal(owned.begin(), owned.end(), blocks.begin(), blocks.end())) << id;
      }
      const int start = in.query_start_loc[static_cast<size_t>(r)];
      const int end = in.query_start_loc[static_cast<size_t>(r) + 1];
      for (int t = start; t < end; ++t) {
        const auto u = static_cast<size_t>(t);
        const int pos = in.positions[u];
        // Positions are contiguous from the computed context.
        ASSERT_EQ(pos, in.num_computed_tokens[static_cast<size_t>(r)] + (t - start));
        ASSERT_LT(static_cast<size_t>(pos / bs), blocks.size()) << id;
        const int64_t expected_slot =
            static_cast<int64_t>(blocks[static_cast<size_t>(pos / bs)]) * bs + pos % bs;
        ASSERT_EQ(in.slot_mapping[u], expected_slot) << id << " pos " << pos;
        if (req) {
          ASSERT_LT(pos, req->num_tokens());
          ASSERT_EQ(in.input_ids[u], req->all_token_ids()[static_cast<size_t>(pos)]);
        }
      }
    }
  }

  // A block held by two requests must be a shared prefix block with equal tokens.
  void check_block_ownership() {
    const auto& kv = engine_.scheduler().kv_cache_manager();
    const int bs = cfg_.cache.block_size;
    std::map<int32_t, std::pair<std::string, size_t>> owner;
    for (const auto& id : kv.requests_holding_blocks()) {
      const auto blocks = kv.block_ids(id);
      for (size_t i = 0; i < blocks.size(); ++i) {
        ASSERT_NE(blocks[i], 0) << "the null block was handed out";
        auto [it, fresh] = owner.emplace(blocks[i], std::make_pair(id, i));
        if (fresh) continue;
        const auto& [other_id, other_index] = it->second;
        ASSERT_EQ(other_index, i) << "block " << blocks[i] << " at different offsets";
        const Request* a = engine_.scheduler().find_request(id);
        const Request* b = engine_.scheduler().find_request(other_id);
        ASSERT_TRUE(a && b);
        const auto ta = a->all_token_ids().subspan(i * bs, static_cast<size_t>(bs));
        const auto tb = b->all_token_ids().subspan(i * bs, static_cast<size_t>(bs));
        ASSERT_TRUE(std::equal(ta.begin(), ta.end(), tb.begin()))
            << "block " << blocks[i] << " shared by " << id << " and " << other_id;
      }
    }
  }

  void check_ref_counts() {
    const auto& kv = engine_.scheduler().kv_cache_manager();
    std::map<int32_t, int> holders;
    for (const auto& id : kv.requests_holding_blocks()) {
      for (int32_t b : kv.block_ids(id)) ++holders[b];
    }
    int zero_ref = 0;
    for (int b = 1; b < cfg_.cache.num_blocks; ++b) {
      const int ref = kv.pool().block(b).ref_cnt;
      ASSERT_EQ(ref, holders[b]) << "block " << b;
      zero_ref += ref == 0;
    }
    ASSERT_EQ(zero_ref, kv.num_free_blocks());
    const auto free_ids = kv.pool().free_block_ids();
    ASSERT_EQ(static_cast<int>(free_ids.size()), kv.num_free_blocks());
    ASSERT_EQ(std::set<int32_t>(free_ids.begin(), free_ids.end()).size(), free_ids.size());
  }

  // A shadow of the paged KV cache: each slot remembers the (token, position) last written to
  // it. After this step's writes, every request must read its whole context back through its
  // block table, which catches prefix hits on blocks that were never computed or were reused.
  void check_shadow_kv() {
    const auto& in = engine_.runner().inputs();
    const auto& batch = engine_.runner().input_batch();
    const int bs = cfg_.cache.block_size;
    for (int t = 0; t < in.num_actual_tokens; ++t) {
      const auto u = static_cast<size_t>(t);
      shadow_kv_[static_cast<size_t>(in.slot_mapping[u])] = {in.input_ids[u], in.positions[u]};
    }
    for (int r = 0; r < in.num_reqs; ++r) {
      const std::string& id = batch.req_id(r);
      const CachedRequestState* state = engine_.runner().request_state(id);
      const int seq_len = in.seq_lens[static_cast<size_t>(r)];
      for (int p = 0; p < seq_len; ++p) {
        const int64_t slot =
            static_cast<int64_t>(state->block_ids[static_cast<size_t>(p / bs)]) * bs + p % bs;
        const auto [token, position] = shadow_kv_[static_cast<size_t>(slot)];
        ASSERT_EQ(position, p) << id << ": slot " << slot << " holds another position";
        ASSERT_EQ(token, state->token_ids[static_cast<size_t>(p)]) << id << " at " << p;
      }
    }
  }

  const EngineCore& engine_;
  const EngineConfig& cfg_;
  std::vector<std::pair<int32_t, int32_t>> shadow_kv_;
};

struct RunResult {
  std::map<std::string, std::vector<int32_t>> tokens;
  std::map<std::string, FinishReason> reasons;
  int64_t preemptions = 0;
  int64_t prefix_hits = 0;
};

RunResult run_workload(const Workload& w) {
  StandInModel model(kWorkloadVocab);
  EngineCore engine(w.config, model);
  InvariantChecker checker(engine, w.config);
  RunResult result;
  size_t ended = 0;
  for (int step = 0; ended < w.requests.size(); ++step) {
    if (step > 5000) {
      ADD_FAILURE() << "no completion after 5000 steps";
      break;
    }
    for (const auto& r : w.requests) {
      if (r.arrival_step != step) continue;
      SamplingParams p;
      p.max_tokens = r.max_tokens;
      p.ignore_eos = true;
      p.temperature = 0.0f;
      engine.add_request(std::make_unique<Request>(r.id, r.prompt, p, std::nullopt,
                                                   static_cast<double>(step), r.priority));
    }
    for (const auto& r : w.requests) {
      if (r.abort_step != step || result.reasons.count(r.id)) continue;
      const std::string id = r.id;
      engine.abort_requests(std::span(&id, 1));
      result.reasons[id] = FinishReason::kAbort;
      ++ended;
    }
    for (const auto& o : engine.step()) {
      auto& t = result.tokens[o.req_id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finish_reason) {
        result.reasons[o.req_id] = *o.finish_reason;
        ++ended;
      }
    }
    checker.check_step();
    if (::testing::Test::HasFatalFailure()) break;
  }
  const auto& kv = engine.scheduler().kv_cache_manager();
  EXPECT_EQ(kv.num_free_blocks(), w.config.cache.num_blocks - 1) << "blocks leaked";
  result.preemptions = engine.scheduler().num_preemptions_total();
  result.prefix_hits = kv.prefix_cache_stats().hits;
  return result;
}

std::vector<int32_t> rule_tokens(const PlannedRequest& r, int count) {
  std::vector<int32_t> t;
  const int p = static_cast<int>(r.prompt.size());
  for (int k = 0; k < count; ++k) t.push_back(StandInModel::next_token(p - 1 + k, kWorkloadVocab));
  return t;
}

TEST(RandomWorkloads, InvariantsHoldAtEveryStepAndTokensFollowTheStandInRule) {
  constexpr int kWorkloads = 2000;
  int64_t total_preemptions = 0, total_hits = 0, total_aborts = 0;
  for (int seed = 0; seed < kWorkloads; ++seed) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    const Workload w = random_workload(rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + w.describe());
    const RunResult result = run_workload(w);
    if (HasFailure()) return;
    total_preemptions += result.preemptions;
    total_hits += result.prefix_hits;
    for (const auto& r : w.requests) {
      const auto& tokens =
          result.tokens.count(r.id) ? result.tokens.at(r.id) : std::vector<int32_t>{};
      ASSERT_TRUE(result.reasons.count(r.id)) << r.id << " never ended";
      const FinishReason reason = result.reasons.at(r.id);
      if (reason == FinishReason::kAbort) {
        ++total_aborts;
        ASSERT_LE(static_cast<int>(tokens.size()), r.max_tokens);
        ASSERT_EQ(tokens, rule_tokens(r, static_cast<int>(tokens.size()))) << r.id;
      } else {
        ASSERT_EQ(reason, FinishReason::kLength) << r.id;
        ASSERT_EQ(tokens, rule_tokens(r, r.max_tokens)) << r.id;
      }
    }
  }
  // The generator must actually exercise preemption, prefix hits and aborts.
  EXPECT_GT(total_preemptions, 100);
  EXPECT_GT(total_hits, 1000);
  EXPECT_GT(total_aborts, 50);
}

// Batch invariance of the bookkeeping: a request's tokens do not depend on its neighbours.
TEST(RandomWorkloads, ARequestGetsTheSameTokensAloneAndInACrowd) {
  std::mt19937 rng(7);
  Workload crowd = random_workload(rng);
  crowd.config.cache.num_blocks = crowd.config.max_num_blocks_per_req() + 1;  // tight pool
  for (auto& r : crowd.requests) r.abort_step = -1;
  const RunResult together = run_workload(crowd);
  for (const auto& r : crowd.requests) {
    Workload alone = crowd;
    alone.requests = {r};
    alone.requests[0].arrival_step = 0;
    const RunResult single = run_workload(alone);
    EXPECT_EQ(single.tokens.at(r.id), together.tokens.at(r.id)) << r.id;
  }
}

}  // namespace
}  // namespace pagedllm
