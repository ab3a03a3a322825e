// The start-up line's weight types: every matrix counted, the most common first.
#include "loader/model_weights.h"

#include <gtest/gtest.h>

#include "loader/load_model.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

WeightMatrix matrix(DType dtype) {
  return WeightMatrix{dtype, 4, 32, nullptr};
}

TEST(WeightTypeMix, CountsEveryMatrixMostCommonFirst) {
  // A Q4_K_M-like file: Q4_K projections, Q6_K for one layer's down and the output layer.
  ModelWeights w;
  w.token_embedding = matrix(DType::kQ6_K);
  for (int i = 0; i < 2; ++i) {
    LayerWeights l;
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      *m = matrix(DType::kQ4_K);
    w.layers.push_back(l);
  }
  w.layers[1].w_down = matrix(DType::kQ6_K);
  w.output = matrix(DType::kQ6_K);
  EXPECT_EQ(weight_type_mix(w), "Q4_K:13,Q6_K:2");
}

TEST(WeightTypeMix, SkipsAbsentMatricesAndBreaksTiesByName) {
  ModelWeights w;
  LayerWeights l;
  l.wq = matrix(DType::kQ8_0);
  l.wo = matrix(DType::kBF16);
  l.w_down = matrix(DType::kQ8_0);
  l.w_up = matrix(DType::kBF16);  // wk, wv, w_gate absent: no rows
  w.layers.push_back(l);
  EXPECT_EQ(weight_type_mix(w), "BF16:2,Q8_0:2");
}

TEST(WeightTypeMix, NamesARealFilesTypes) {
  const ModelWeights w = load_model(test::model_path("stories260K/stories260K.gguf"));
  // 5 layers of 7 projections; the output layer is the tied f32 embedding.
  EXPECT_EQ(weight_type_mix(w), "F32:36");
}

}  // namespace
}  // namespace pagedllm
