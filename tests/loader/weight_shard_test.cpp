// Megatron-style shards at load: a rank keeps its heads' rows of Q/K/V, its rows of gate/up and
// the matching input columns of o_proj/down_proj, refuses counts that do not divide, and never
// cuts a quantization block.
#include "loader/weight_shard.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "loader/load_model.h"
#include "loader/model_export.h"
#include "model/presets.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

ModelWeights stories() {
  return load_model(test::model_path("stories260K/stories260K.gguf"));
}

std::string shard_error(ModelWeights w, int ranks) {
  try {
    shard_weights(std::move(w), 0, ranks);
  } catch (const ModelLoadError& e) {
    return e.what();
  }
  return "no error";
}

TEST(WeightShard, ARankKeepsItsHeadsRowsAndTheMatchingInputColumns) {
  const ModelWeights full = stories();  // 8 heads, 4 KV heads of 8, FFN 172
  const ModelWeights shard = shard_weights(stories(), 1, 2);
  const ModelConfig& c = shard.config;
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.hidden_dim, 86);
  EXPECT_EQ(c.dim, 64);
  const LayerWeights& f = full.layers[2];
  const LayerWeights& s = shard.layers[2];
  // Column-parallel: rank 1 has the second half of the rows (heads 4-7, KV heads 2-3).
  ASSERT_EQ(s.wq.rows, 32);
  EXPECT_EQ(std::memcmp(s.wq.row(0), f.wq.row(32), s.wq.row_stride() * 32), 0);
  ASSERT_EQ(s.wk.rows, 16);
  EXPECT_EQ(std::memcmp(s.wk.row(0), f.wk.row(16), s.wk.row_stride() * 16), 0);
  ASSERT_EQ(s.w_up.rows, 86);
  EXPECT_EQ(std::memcmp(s.w_up.row(0), f.w_up.row(86), s.w_up.row_stride() * 86), 0);
  // Row-parallel: every output row, the second half of its input columns.
  ASSERT_EQ(s.wo.rows, 64);
  ASSERT_EQ(s.wo.cols, 32);
  ASSERT_EQ(s.w_down.cols, 86);
  for (int r : {0, 17, 63}) {
    EXPECT_EQ(std::memcmp(s.wo.row(r), f.wo.row(r) + 32 * sizeof(float), 32 * sizeof(float)), 0);
    EXPECT_EQ(
        std::memcmp(s.w_down.row(r), f.w_down.row(r) + 86 * sizeof(float), 86 * sizeof(float)), 0);
  }
  // Vocab-parallel output layer: rank 1 has the rows of tokens 256-511.
  ASSERT_EQ(shard.output.rows, 256);
  EXPECT_EQ(shard.output.cols, 64);
  EXPECT_EQ(std::memcmp(shard.output.row(0), full.output.row(256), shard.output.row_stride() * 256),
            0);
  EXPECT_EQ(shard_weights(stories(), 0, 2).output.rows, 256);
}

TEST(WeightShard, AnyVocabularySplitsIntoSharesThatDifferByAtMostOneRow) {
  // 11 tokens over 3 ranks: [0, 3), [3, 7), [7, 11).
  EXPECT_EQ(vocab_share(11, 0, 3).begin, 0);
  EXPECT_EQ(vocab_share(11, 0, 3).count, 3);
  EXPECT_EQ(vocab_share(11, 1, 3).begin, 3);
  EXPECT_EQ(vocab_share(11, 1, 3).count, 4);
  EXPECT_EQ(vocab_share(11, 2, 3).begin, 7);
  EXPECT_EQ(vocab_share(11, 2, 3).count, 4);
  for (int vocab : {1, 7, 512, 32000, 128256, 151936}) {
    for (int ranks : {1, 2, 3, 4, 8}) {
      int next = 0;
      for (int r = 0; r < ranks; ++r) {
        const VocabShare share = vocab_share(vocab, r, ranks);
        EXPECT_EQ(share.begin, next);
        EXPECT_GE(share.count, vocab / ranks);
        EXPECT_LE(share.count, vocab / ranks + 1);
        next = share.begin + share.count;
      }
      EXPECT_EQ(next, vocab) << vocab << " over " << ranks;
    }
  }
}

TEST(WeightShard, RefusesHeadsOrKvHeadsThatDoNotDivide) {
  EXPECT_NE(shard_error(stories(), 3)
                .find("8 attention heads do not divide by "
                      "--tensor-parallel-size 3"),
            std::string::npos);
  EXPECT_NE(shard_error(stories(), 8).find("4 KV heads do not divide by --tensor-parallel-size 8"),
            std::string::npos);
}

TEST(WeightShard, NeverCutsAQuantizationBlock) {
  ExportSpec spec;
  spec.config = preset_config("tiny");
  spec.config.hidden_dim = 96;  // three Q8_0 blocks: two ranks would get one and a half
  spec.dtype = DType::kQ8_0;
  spec.source_rope = RopeStyle::kInterleaved;
  spec.vocab = synthetic_vocab(spec.config.vocab_size);
  const std::string path = test::temp_path("shard-q8.gguf");
  export_gguf(spec, random_weights(spec.config, 3), path);
  const std::string error = shard_error(load_model(path), 2);
  EXPECT_NE(error.find("ffn_down of Q8_0 has 96 columns; a shard of 48 would cut its 32-element "
                       "blocks"),
            std::string::npos)
      << error;
  // Whole blocks split: o_proj's 64 columns give each of two ranks one block per row.
  spec.config.hidden_dim = 128;
  export_gguf(spec, random_weights(spec.config, 3), path);
  const ModelWeights shard = shard_weights(load_model(path), 1, 2);
  EXPECT_EQ(shard.layers[0].wo.dtype, DType::kQ8_0);
  EXPECT_EQ(shard.layers[0].wo.cols, 32);
  EXPECT_EQ(shard.layers[0].w_down.cols, 64);
}

}  // namespace
}  // namespace pagedllm
