// The vision half of a model as the engine loads it: from an HF directory or an mmproj file, the
// matrix products in bf16 for a checkpoint stored in 16-bit floats and f32 otherwise.
#include "model/vision_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/cpu/cpu_features.h"
#include "model/vision_language_preset.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

std::string write_preset(DType dtype, bool gguf) {
  const VisionLanguagePreset preset = vision_language_preset("tiny-qwen25-vl");
  ExportSpec spec;
  spec.config = preset.text;
  spec.dtype = dtype;
  const std::string base = test::temp_path("vision-model-" + std::string(to_string(dtype)));
  if (gguf) {
    write_vision_language_gguf(preset, spec, 4, base + ".gguf", base + "-mmproj.gguf");
    return base + "-mmproj.gguf";
  }
  write_vision_language_hf_directory(preset, spec, 4, base);
  return base;
}

std::vector<float> encode_random_image(const VisionModel& vm) {
  const std::vector<GridTHW> grid = {{1, 6, 8}};
  std::vector<float> pixels(static_cast<size_t>(48 * vm.encoder->config().patch_dim()));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (float& x : pixels) x = u(rng);
  return vm.encoder->encode(pixels, grid);
}

TEST(VisionModel, SixteenBitCheckpointsRunBf16ProductsCloseToTheF32Ones) {
  const auto f32 = load_vision_model(write_preset(DType::kF32, false), "");
  const auto bf16 = load_vision_model(write_preset(DType::kBF16, false), "");
  const auto f16_mmproj = load_vision_model("", write_preset(DType::kF16, true));
  ASSERT_TRUE(f32 && bf16 && f16_mmproj);
  EXPECT_EQ(f32->encoder->config().matmul_dtype, DType::kF32);
  EXPECT_EQ(bf16->encoder->config().matmul_dtype, DType::kBF16);
  EXPECT_EQ(f16_mmproj->encoder->config().matmul_dtype, DType::kBF16);
  const std::vector<float> a = encode_random_image(*f32), b = encode_random_image(*bf16);
  ASSERT_EQ(a.size(), b.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err += (a[i] - b[i]) * (a[i] - b[i]);
    norm += a[i] * a[i];
  }
  // bf16 weights and activations: a relative error of a few parts in a thousand, not zero.
  EXPECT_LT(std::sqrt(err / norm), 2e-2);
  EXPECT_GT(std::sqrt(err / norm), 1e-5);
}

TEST(VisionModel, AQ8ProjectorRunsInt8ProductsCloseToTheF32Ones) {
  const auto f32 = load_vision_model("", write_preset(DType::kF32, true));
  const auto q8 = load_vision_model("", write_preset(DType::kQ8_0, true));
  EXPECT_EQ(f32->encoder->config().matmul_dtype, DType::kF32);
  const bool int8 = cpu::active_isa() >= cpu::Isa::kAvx2;
  EXPECT_EQ(q8->encoder->config().matmul_dtype, int8 ? DType::kQ8_0 : DType::kBF16);
  const std::vector<float> a = encode_random_image(*f32), b = encode_random_image(*q8);
  ASSERT_EQ(a.size(), b.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err += (a[i] - b[i]) * (a[i] - b[i]);
    norm += a[i] * a[i];
  }
  EXPECT_LT(std::sqrt(err / norm), 3e-2);
  EXPECT_GT(std::sqrt(err / norm), 1e-5);
}

TEST(VisionModel, Bf16ProductsGiveAnImageTheSameOutputBesideOthersAsAlone) {
  const auto vm = load_vision_model(write_preset(DType::kBF16, false), "");
  const std::vector<GridTHW> grids = {{1, 6, 8}, {1, 4, 4}};
  const auto dim = static_cast<size_t>(vm->encoder->config().patch_dim());
  std::vector<float> pixels((48 + 16) * dim);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (float& x : pixels) x = u(rng);
  const std::vector<float> both = vm->encoder->encode(pixels, grids);
  const std::vector<float> first =
      vm->encoder->encode(std::span(pixels).first(48 * dim), std::span(grids).first(1));
  const std::vector<float> second =
      vm->encoder->encode(std::span(pixels).subspan(48 * dim), std::span(grids).last(1));
  ASSERT_EQ(both.size(), first.size() + second.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), both.begin()));
  EXPECT_TRUE(std::equal(second.begin(), second.end(), both.begin() + first.size()));
}

TEST(VisionModel, ATextOnlyModelHasNoVisionPart) {
  EXPECT_EQ(load_vision_model(test::model_path("stories260K/stories260K.gguf"), ""), nullptr);
}

}  // namespace
}  // namespace pagedllm
