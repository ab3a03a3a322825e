// The worked examples of the design notes (../shared/seeds), reproduced exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "core/scheduler.h"
#include "model/stand_in_model.h"
#include "worker/model_runner.h"

namespace pagedllm {
namespace {

using V = std::vector<int32_t>;
using V64 = std::vector<int64_t>;

template <typename T>
std::vector<T> head(const std::vector<T>& v, int n) {
  return std::vector<T>(v.begin(), v.begin() + n);
}

V range(int from, int to) {
  V v(static_cast<size_t>(to - from));
  std::iota(v.begin(), v.end(), from);
  return v;
}

// Block size 2, max_model_len 12, budget 10, prompts of 3, 2 and 8 tokens.
class ThreeRequestExample : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_.cache.block_size = 2;
    cfg_.cache.num_blocks = 16;
    cfg_.cache.enable_prefix_caching = false;
    cfg_.scheduler.max_model_len = 12;
    cfg_.scheduler.max_num_batched_tokens = 10;
    cfg_.scheduler.max_num_seqs = 4;
    scheduler_ = std::make_unique<Scheduler>(cfg_);
    RunnerOptions options;
    options.build_attention_mask = true;
    runner_ = std::make_unique<ModelRunner>(cfg_, options);
    prompts_ = {{100, 101, 102}, {200, 201}, {300, 301, 302, 303, 304, 305, 306, 307}};
    for (size_t i = 0; i < prompts_.size(); ++i) {
      SamplingParams p;
      p.max_tokens = 4;
      p.ignore_eos = true;
      p.temperature = 0.0f;
      scheduler_->add_request(std::make_unique<Request>(std::to_string(i), prompts_[i], p));
    }
  }

  const ModelInputs& run_step() {
    scheduler_->schedule(out_);
    runner_->execute_model(out_, model_, runner_out_);
    outputs_.clear();
    scheduler_->update_from_output(out_, runner_out_, outputs_);
    return runner_->inputs();
  }

  EngineConfig cfg_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  StandInModel model_{512};
  std::vector<V> prompts_;
  SchedulerOutput out_;
  ModelRunnerOutput runner_out_;
  std::vector<EngineCoreOutput> outputs_;
};

TEST_F(ThreeRequestExample, Step1AllPrefillWithChunkedThirdRequest) {
  const ModelInputs& in = run_step();
  ASSERT_EQ(out_.num_scheduled_tokens.size(), 3u);
  EXPECT_EQ(out_.num_scheduled_tokens[0].num_tokens, 3);
  EXPECT_EQ(out_.num_scheduled_tokens[1].num_tokens, 2);
  EXPECT_EQ(out_.num_scheduled_tokens[2].num_tokens, 5);
  const int n = in.num_actual_tokens;
  ASSERT_EQ(n, 10);
  EXPECT_EQ(head(in.req_indices, n), (V{0, 0, 0, 1, 1, 2, 2, 2, 2, 2}));
  EXPECT_EQ(head(in.positions, n), (V{0, 1, 2, 0, 1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(head(in.token_indices, n), (V{0, 1, 2, 12, 13, 24, 25, 26, 27, 28}));
  EXPECT_EQ(head(in.input_ids, n), (V{100, 101, 102, 200, 201, 300, 301, 302, 303, 304}));
  EXPECT_EQ(head(in.block_table_indices, n), (V{0, 0, 1, 6, 6, 12, 12, 13, 13, 14}));
  EXPECT_EQ(head(in.block_numbers, n), (V{1, 1, 2, 3, 3, 4, 4, 5, 5, 6}));
  EXPECT_EQ(head(in.block_offsets, n), (V{0, 1, 0, 0, 1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(head(in.slot_mapping, n), (V64{2, 3, 4, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(head(in.query_start_loc, 4), (V{0, 3, 5, 10}));
  EXPECT_EQ(head(in.seq_lens, 3), (V{3, 2, 5}));
  EXPECT_EQ(head(in.num_computed_tokens, 3), (V{0, 0, 0}));
  EXPECT_EQ(in.num_reqs, 3);
  EXPECT_EQ(in.max_query_len, 5);
  EXPECT_EQ(in.attn_state, AttentionState::kPrefillNoCache);
  EXPECT_EQ(head(in.logits_indices, 3), (V{2, 4, 9}));
  // One 5x5 causal mask shared by all requests.
  ASSERT_EQ(in.attn_mask_rows, 5);
  ASSERT_EQ(in.attn_mask_cols, 5);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 5; ++c) {
      const float v = in.attn_mask[static_cast<size_t>(r * 5 + c)];
      if (c <= r)
        EXPECT_EQ(v, 0.0f) << r << "," << c;
      else
        EXPECT_TRUE(std::isinf(v) && v < 0) << r << "," << c;
    }
  }
  // Block table rows [1 2], [3], [4 5 6]; the rest of each row is the null block.
  const auto& table = runner_->input_batch().block_table();
  EXPECT_EQ(V(table.flat().begin(), table.flat().begin() + 18),
            (V{1, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 4, 5, 6, 0, 0, 0}));
  // Requests 0 and 1 finished their prompts and sampled; request 2's sample was discarded.
  ASSERT_EQ(outputs_.size(), 2u);
  EXPECT_EQ(outputs_[0].new_token_ids, V{StandInModel::next_token(2, 512)});
  EXPECT_EQ(outputs_[1].new_token_ids, V{StandInModel::next_token(1, 512)});
  EXPECT_TRUE(runner_out_.sampled_token_ids[2].empty());
}

TEST_F(ThreeRequestExample, Step2DecodesAndChunkGetBlocks7And8FromTheAllocator) {
  run_step();
  const ModelInputs& in = run_step();
  ASSERT_EQ(out_.num_scheduled_tokens.size(), 3u);
  EXPECT_EQ(out_.num_scheduled_tokens[0].num_tokens, 1);
  EXPECT_EQ(out_.num_scheduled_tokens[1].num_tokens, 1);
  EXPECT_EQ(out_.num_scheduled_tokens[2].num_tokens, 3);
  const int n = in.num_actual_tokens;
  ASSERT_EQ(n, 5);
  EXPECT_EQ(head(in.req_indices, n), (V{0, 1, 2, 2, 2}));
  EXPECT_EQ(head(in.positions, n), (V{3, 2, 5, 6, 7}));
  EXPECT_EQ(head(in.token_indices, n), (V{3, 14, 29, 30, 31}));
  const int32_t t03 = StandInModel::next_token(2, 512);
  const int32_t t12 = StandInModel::next_token(1, 512);
  EXPECT_EQ(head(in.input_ids, n), (V{t03, t12, 305, 306, 307}));
  EXPECT_EQ(head(in.block_table_indices, n), (V{1, 7, 14, 15, 15}));
  EXPECT_EQ(head(in.block_numbers, n), (V{2, 7, 6, 8, 8}));
  EXPECT_EQ(head(in.block_offsets, n), (V{1, 0, 1, 0, 1}));
  EXPECT_EQ(head(in.slot_mapping, n), (V64{5, 14, 13, 16, 17}));
  EXPECT_EQ(head(in.query_start_loc, 4), (V{0, 1, 2, 5}));
  EXPECT_EQ(head(in.seq_lens, 3), (V{4, 3, 8}));
  EXPECT_EQ(head(in.num_computed_tokens, 3), (V{3, 2, 5}));
  EXPECT_EQ(in.max_query_len, 3);
  EXPECT_EQ(in.attn_state, AttentionState::kChunkedPrefill);
  EXPECT_EQ(in.num_decodes, 2);
  EXPECT_EQ(in.num_prefills, 1);
  EXPECT_EQ(in.num_prefill_tokens, 3);
  EXPECT_EQ(head(in.seq_start_loc, 4), (V{0, 4, 7, 15}));
  // The blocks came out of the allocator: 7 for request 1, 8 for request 2.
  ASSERT_EQ(out_.scheduled_cached_reqs.size(), 3u);
  EXPECT_EQ(out_.scheduled_cached_reqs[0].new_block_ids, V{});
  EXPECT_EQ(out_.scheduled_cached_reqs[1].new_block_ids, V{7});
  EXPECT_EQ(out_.scheduled_cached_reqs[2].new_block_ids, V{8});
  const auto& table = runner_->input_batch().block_table();
  EXPECT_EQ(V(table.flat().begin(), table.flat().begin() + 18),
            (V{1, 2, 0, 0, 0, 0, 3, 7, 0, 0, 0, 0, 4, 5, 6, 8, 0, 0}));
  // A 5x8 mask: each token's causal row at its position.
  ASSERT_EQ(in.attn_mask_rows, 5);
  ASSERT_EQ(in.attn_mask_cols, 8);
  const V visible_per_row = {4, 3, 6, 7, 8};
  for (int r = 0; r < 5; ++r) {
    int visible = 0;
    for (int c = 0; c < 8; ++c) visible += in.attn_mask[static_cast<size_t>(r * 8 + c)] == 0.0f;
    EXPECT_EQ(visible, visible_per_row[static_cast<size_t>(r)]) << "row " << r;
  }
  // Token ids table after sampling: T_0_3 and T_1_2 were written at the end of step 1.
  const auto& batch = runner_->input_batch();
  EXPECT_EQ(batch.token_ids()[3], t03);
  EXPECT_EQ(batch.token_ids()[12 + 2], t12);
}

// Five requests, block_size 16, max_model_len 240: requests 0 and 1 decode after 54 and 145
// computed tokens, 2 and 3 prefill fully (93, 75), 4 is a 30-token chunk. Blocks are handed
// out in order, as the note assumes.
TEST(FiveRequestExample, SlotMappingAndQueryStartLocMatchTheNotes) {
  EngineConfig cfg;
  cfg.cache.block_size = 16;
  cfg.cache.num_blocks = 100;
  cfg.scheduler.max_model_len = 240;
  cfg.scheduler.max_num_batched_tokens = 200;
  cfg.scheduler.max_num_seqs = 8;
  ModelRunner runner(cfg);

  const V prompt_lens = {55, 146, 93, 75, 100};
  const V computed = {54, 145, 0, 0, 0};
  const V scheduled = {1, 1, 93, 75, 30};
  const std::vector<V> blocks = {range(1, 5), range(5, 15), range(15, 21), range(21, 26),
                                 range(26, 28)};
  SchedulerOutput out;
  for (int i = 0; i < 5; ++i) {
    const auto u = static_cast<size_t>(i);
    NewRequestData n;
    n.req_id = std::to_string(i);
    n.prompt_token_ids = range(1000 * i, 1000 * i + prompt_lens[u]);
    n.block_ids = blocks[u];
    n.num_computed_tokens = computed[u];
    out.scheduled_new_reqs.push_back(n);
    out.num_scheduled_tokens.push_back({n.req_id, scheduled[u]});
    out.total_num_scheduled_tokens += scheduled[u];
  }
  runner.update_states(out);
  const ModelInputs& in = runner.prepare_inputs();

  ASSERT_EQ(in.num_actual_tokens, 200);
  EXPECT_EQ(head(in.cu_num_tokens, 5), (V{1, 2, 95, 170, 200}));
  EXPECT_EQ(head(in.query_start_loc, 6), (V{0, 1, 2, 95, 170, 200}));
  EXPECT_EQ(head(in.seq_lens, 5), (V{55, 146, 93, 75, 30}));
  EXPECT_EQ(in.positions[0], 54);
  EXPECT_EQ(in.positions[1], 145);
  EXPECT_EQ(in.positions[2], 0);
  EXPECT_EQ(in.positions[94], 92);
  EXPECT_EQ(in.positions[199], 29);
  EXPECT_EQ(in.token_indices[0], 54);
  EXPECT_EQ(in.token_indices[1], 145 + 240);
  EXPECT_EQ(in.token_indices[2], 2 * 240);
  EXPECT_EQ(in.block_table_indices[0], 3);
  EXPECT_EQ(in.block_table_indices[1], 24);
  EXPECT_EQ(in.block_table_indices[2], 30);
  EXPECT_EQ(in.block_table_indices[94], 35);
  EXPECT_EQ(in.block_table_indices[95], 45);
  EXPECT_EQ(in.block_table_indices[169], 49);
  EXPECT_EQ(in.block_table_indices[199], 61);
  EXPECT_EQ(in.block_numbers[0], 4);
  EXPECT_EQ(in.block_numbers[1], 14);
  EXPECT_EQ(in.block_numbers[199], 27);
  EXPECT_EQ(in.block_offsets[0], 6);
  EXPECT_EQ(in.block_offsets[1], 1);
  EXPECT_EQ(in.block_offsets[199], 13);
  EXPECT_EQ(head(in.slot_mapping, 4), (V64{70, 225, 240, 241}));
  EXPECT_EQ(in.slot_mapping[94], 332);
  EXPECT_EQ(in.slot_mapping[95], 336);
  EXPECT_EQ(in.slot_mapping[169], 410);
  EXPECT_EQ(in.slot_mapping[170], 416);
  EXPECT_EQ(in.slot_mapping[199], 445);
  EXPECT_EQ(in.input_ids[0], 54);
  EXPECT_EQ(in.input_ids[1], 1000 + 145);
  EXPECT_EQ(head(in.logits_indices, 5), (V{0, 1, 94, 169, 199}));
  EXPECT_EQ(in.max_query_len, 93);
  EXPECT_EQ(in.max_seq_len, 146);
  EXPECT_EQ(in.attn_state, AttentionState::kChunkedPrefill);
  EXPECT_EQ(in.num_decodes, 2);
  EXPECT_EQ(in.num_decode_tokens, 2);
  EXPECT_EQ(in.num_prefills, 3);
  EXPECT_EQ(in.num_prefill_tokens, 198);
}

TEST(PrepareInputs, PaddingBucketsSetPaddingSlotsToMinusOne) {
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.cache.num_blocks = 20;
  cfg.scheduler.max_model_len = 16;
  cfg.scheduler.max_num_batched_tokens = 16;
  cfg.scheduler.max_num_seqs = 4;
  RunnerOptions options;
  options.padding_buckets = {8, 16};
  ModelRunner runner(cfg, options);
  SchedulerOutput out;
  NewRequestData n{"a", {5, 6, 7}, {}, {3}, 0, std::nullopt, {}};
  out.scheduled_new_reqs.push_back(n);
  out.num_scheduled_tokens.push_back({"a", 3});
  out.total_num_scheduled_tokens = 3;
  runner.update_states(out);
  const ModelInputs& in = runner.prepare_inputs();
  EXPECT_EQ(in.num_actual_tokens, 3);
  EXPECT_EQ(in.num_input_tokens, 8);
  EXPECT_EQ(head(in.slot_mapping, 8), (V64{12, 13, 14, -1, -1, -1, -1, -1}));
  EXPECT_EQ(head(in.input_ids, 8), (V{5, 6, 7, 0, 0, 0, 0, 0}));
}

TEST(PrepareInputs, DecodeRowsAreMovedInFrontOfPrefills) {
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.cache.num_blocks = 40;
  cfg.scheduler.max_model_len = 16;
  cfg.scheduler.max_num_batched_tokens = 32;
  cfg.scheduler.max_num_seqs = 4;
  ModelRunner runner(cfg);
  SchedulerOutput out;
  // Scheduler order: prefill p1, decode d1, prefill p2, decode d2.
  const std::vector<std::pair<std::string, int>> reqs = {
      {"p1", 5}, {"d1", 1}, {"p2", 6}, {"d2", 1}};
  int32_t next_block = 1;
  for (const auto& [id, count] : reqs) {
    NewRequestData n;
    n.req_id = id;
    n.prompt_token_ids = V(8, 1);
    n.num_computed_tokens = count == 1 ? 7 : 0;
    n.block_ids = {next_block, next_block + 1};
    next_block += 2;
    out.scheduled_new_reqs.push_back(n);
    out.num_scheduled_tokens.push_back({id, count});
    out.total_num_scheduled_tokens += count;
  }
  runner.update_states(out);
  const ModelInputs& in = runner.prepare_inputs();
  const auto& batch = runner.input_batch();
  EXPECT_EQ(batch.req_id(0), "d2");
  EXPECT_EQ(batch.req_id(1), "d1");
  EXPECT_EQ(batch.req_id(2), "p2");
  EXPECT_EQ(batch.req_id(3), "p1");
  EXPECT_EQ(in.num_decodes, 2);
  EXPECT_EQ(in.num_prefills, 2);
  EXPECT_EQ(head(in.query_start_loc, 5), (V{0, 1, 2, 8, 13}));
  // Rows follow their requests: d2 owns blocks 7, 8 and decodes at position 7.
  EXPECT_EQ(in.slot_mapping[0], 8 * 4 + 3);
  EXPECT_EQ(runner.row_of_scheduled(0), 3);
  EXPECT_EQ(runner.row_of_scheduled(3), 0);
}

}  // namespace
}  // namespace pagedllm
