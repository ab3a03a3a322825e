#include "worker/input_batch.h"

#include <gtest/gtest.h>

#include <vector>

#include "worker/block_table.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

CachedRequestState make_state(const std::string& id, Ids tokens, Ids blocks, float temperature) {
  CachedRequestState s;
  s.req_id = id;
  s.token_ids = std::move(tokens);
  s.num_prompt_tokens = static_cast<int>(s.token_ids.size());
  s.block_ids = std::move(blocks);
  s.sampling_params.temperature = temperature;
  return s;
}

Ids row_of(const BlockTable& t, int r) {
  return Ids(t.row(r).begin(), t.row(r).end());
}

TEST(BlockTable, AddAppendMoveAndSwapRowsKeepUnusedEntriesNull) {
  BlockTable t(3, 4);
  t.add_row(Ids{5, 6}, 0);
  t.append_row(Ids{7}, 0);
  t.add_row(Ids{9}, 1);
  EXPECT_EQ(row_of(t, 0), (Ids{5, 6, 7}));
  t.swap_rows(0, 1);
  EXPECT_EQ(row_of(t, 0), (Ids{9}));
  EXPECT_EQ(row_of(t, 1), (Ids{5, 6, 7}));
  EXPECT_EQ(Ids(t.flat().begin(), t.flat().begin() + 8), (Ids{9, 0, 0, 0, 5, 6, 7, 0}));
  t.move_row(1, 0);
  EXPECT_EQ(row_of(t, 0), (Ids{5, 6, 7}));
  EXPECT_EQ(t.num_blocks(1), 0);
  EXPECT_EQ(Ids(t.flat().begin(), t.flat().begin() + 8), (Ids{5, 6, 7, 0, 0, 0, 0, 0}));
  EXPECT_THROW(t.append_row(Ids{1, 2}, 0), std::length_error);
}

TEST(InputBatch, AddsAtTheLowestFreeRowAndCondenseFillsHolesFromTheBack) {
  InputBatch b(4, 8, 4);
  auto a = make_state("a", {1, 2}, {1}, 0.1f), bb = make_state("b", {3}, {2}, 0.2f);
  auto c = make_state("c", {4, 5, 6}, {3, 4}, 0.3f), d = make_state("d", {7}, {5}, 0.4f);
  auto e = make_state("e", {8}, {6}, 0.5f), f = make_state("f", {9}, {7}, 0.6f);
  EXPECT_EQ(b.add_request(a), 0);
  EXPECT_EQ(b.add_request(bb), 1);
  EXPECT_EQ(b.add_request(c), 2);
  EXPECT_EQ(b.add_request(d), 3);
  ASSERT_TRUE(b.remove_request("a"));
  ASSERT_TRUE(b.remove_request("c"));
  EXPECT_FALSE(b.remove_request("zzz"));
  EXPECT_EQ(a.row, -1);
  EXPECT_EQ(b.add_request(e), 0);  // lowest hole
  b.condense();                    // d moves into row 2's hole
  EXPECT_EQ(b.num_reqs(), 3);
  EXPECT_EQ(b.req_id(0), "e");
  EXPECT_EQ(b.req_id(1), "b");
  EXPECT_EQ(b.req_id(2), "d");
  EXPECT_EQ(b.index_of("d"), 2);
  EXPECT_EQ(d.row, 2);
  EXPECT_EQ(b.state(2), &d);
  EXPECT_EQ(Ids(b.row_tokens(2).begin(), b.row_tokens(2).end()), (Ids{7}));
  EXPECT_EQ(row_of(b.block_table(), 2), (Ids{5}));
  EXPECT_FLOAT_EQ(b.sampling().temperature[2], 0.4f);
  EXPECT_EQ(b.block_table().num_blocks(3), 0);
  // The next add goes after the live rows.
  EXPECT_EQ(b.add_request(f), 3);
}

TEST(InputBatch, SwapRowsExchangesEveryPerRowField) {
  InputBatch b(2, 8, 4);
  auto a = make_state("a", {1, 2, 3}, {1, 2}, 0.1f), bb = make_state("b", {9}, {3}, 0.9f);
  b.add_request(a);
  b.add_request(bb);
  b.set_num_computed_tokens(0, 2);
  b.swap_rows(0, 1);
  EXPECT_EQ(b.req_id(0), "b");
  EXPECT_EQ(b.index_of("a"), 1);
  EXPECT_EQ(a.row, 1);
  EXPECT_EQ(bb.row, 0);
  EXPECT_EQ(b.num_tokens(1), 3);
  EXPECT_EQ(b.num_computed_tokens(1), 2);
  EXPECT_EQ(b.num_computed_tokens(0), 0);
  EXPECT_EQ(Ids(b.row_tokens(1).begin(), b.row_tokens(1).end()), (Ids{1, 2, 3}));
  EXPECT_EQ(row_of(b.block_table(), 0), (Ids{3}));
  EXPECT_FLOAT_EQ(b.sampling().temperature[0], 0.9f);
}

TEST(InputBatch, AppendTokenWritesTheTokenTableAndRefusesOverflow) {
  InputBatch b(1, 3, 2);
  auto a = make_state("a", {1, 2}, {1}, 1.0f), bb = make_state("b", {1}, {2}, 1.0f);
  b.add_request(a);
  b.append_token(0, 42);
  EXPECT_EQ(b.token_ids()[2], 42);
  EXPECT_EQ(b.num_tokens(0), 3);
  EXPECT_THROW(b.append_token(0, 43), std::length_error);
  EXPECT_THROW(b.add_request(bb), std::length_error);
}

}  // namespace
}  // namespace pagedllm
