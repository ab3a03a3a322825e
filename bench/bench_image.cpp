// Image preprocessing for Qwen2-VL: PIL-exact bicubic resize and the whole preprocessing of a
// 1920x1080 photo-sized image (to 1316x728, 4888 patches, 1222 image tokens).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "multimodal/qwen2vl_image_processor.h"
#include "multimodal/resize.h"

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

}  // namespace

BENCHMARK_MAIN();
