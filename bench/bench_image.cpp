// Image preprocessing for Qwen2-VL: PIL-exact bicubic resize and the whole preprocessing of a
// 1920x1080 photo-sized image (to 1316x728, 4888 patches, 1222 image tokens).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "multimodal/qwen2vl_image_processor.h"
#include "multimodal/resize.h"
#include "multimodal/vision_encoder.h"

namespace {

using namespace pagedllm;

Image test_image(int width, int height) {
  Image image(width, height, 3);
  uint32_t state = 12345;
  for (uint8_t& v : image.pixels) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(state >> 24);
  }
  return image;
}

void BM_ResizeBicubic1080pTo728p(benchmark::State& state) {
  const Image image = test_image(1920, 1080);
  for (auto _ : state) benchmark::DoNotOptimize(resize_bicubic(image, 1316, 728));
}
BENCHMARK(BM_ResizeBicubic1080pTo728p)->Unit(benchmark::kMillisecond);

void BM_Qwen2VLPreprocess1080p(benchmark::State& state) {
  const Image image = test_image(1920, 1080);
  const Qwen2VLImageProcessorConfig config;
  for (auto _ : state) benchmark::DoNotOptimize(qwen2vl_preprocess_image(image, config));
}
BENCHMARK(BM_Qwen2VLPreprocess1080p)->Unit(benchmark::kMillisecond);

void BM_Qwen2VLPreprocess448(benchmark::State& state) {
  const Image image = test_image(448, 448);
  const Qwen2VLImageProcessorConfig config;
  for (auto _ : state) benchmark::DoNotOptimize(qwen2vl_preprocess_image(image, config));
}
BENCHMARK(BM_Qwen2VLPreprocess448)->Unit(benchmark::kMillisecond);

// Qwen2.5-VL-3B's vision shapes (width 1280, 16 heads, MLP 3420, out 2048) with 4 of its 32
// blocks (the last with full attention), on one 448x448 image: 1024 patches, 256 tokens.
// Multiply by 8 for the whole tower's blocks.
void BM_VisionEncoderQwen25_3BShape4Blocks448(benchmark::State& state) {
  VisionEncoderConfig c;
  c.family = VisionFamily::kQwen25VL;
  c.depth = 4;
  c.hidden_size = 1280;
  c.num_heads = 16;
  c.intermediate_size = 3420;
  c.out_hidden_size = 2048;
  c.fullatt_block_indexes = {3};
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kQ8_0};
  c.matmul_dtype = dtypes[state.range(0)];
  const auto weights = [](const std::string& name, size_t n) {
    std::vector<float> w(n);
    const bool norm =
        name.find("norm") != std::string::npos || name.find("ln_q") != std::string::npos;
    for (size_t i = 0; i < n; ++i) w[i] = (norm ? 1.0f : 0.0f) + 0.02f * std::sin(float(i % 4099));
    return w;
  };
  const VisionEncoder encoder(c, weights);
  const GridTHW grid{1, 32, 32};
  std::vector<float> pixels(grid.num_patches() * c.patch_dim());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::cos(float(i % 977));
  for (auto _ : state) benchmark::DoNotOptimize(encoder.encode(pixels, std::span(&grid, 1)));
}
BENCHMARK(BM_VisionEncoderQwen25_3BShape4Blocks448)
    ->ArgName("f32_bf16_q8")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
