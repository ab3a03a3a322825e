// Image requests for `bench throughput`: each prompt starts with N distinct random images of
// W x H pixels (distinct, so the encoder cache never spares an encoder pass), prepared before
// the clock starts, as a server prepares them on its HTTP threads.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "pagedllm/engine.h"

namespace pagedllm {

struct BenchImageOptions {
  std::string size;  // "WxH"; empty: no images
  int per_prompt = 0;
  bool enabled() const { return !size.empty() || per_prompt > 0; }
};

struct BenchImages {
  std::vector<std::vector<ImageInput>> per_prompt;
  int64_t num_images = 0;
  int64_t num_image_tokens = 0;
  double prepare_seconds = 0.0;
};

// Puts one placeholder per image at the start of each prompt and prepares the images. Throws
// std::runtime_error (one line) for a model without images or a malformed size.
BenchImages make_bench_images(Engine& engine, const BenchImageOptions& options,
                              std::vector<std::vector<int32_t>>& prompts, std::mt19937& rng);

}  // namespace pagedllm
