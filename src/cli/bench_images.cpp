#include "cli/bench_images.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace pagedllm {

namespace {

std::pair<int, int> parse_size(const std::string& size) {
  int w = 0, h = 0;
  char x = 0, extra = 0;
  if (std::sscanf(size.c_str(), "%d%c%d%c", &w, &x, &h, &extra) != 3 || (x != 'x' && x != 'X') ||
      w < 1 || h < 1 || w > 16384 || h > 16384)
    throw std::runtime_error("--image-size must be WxH, e.g. 448x448 (got '" + size + "')");
  return {w, h};
}

// <|vision_start|><|image_pad|><|vision_end|> as the model's tokenizer reads it.
std::vector<int32_t> placeholder_tokens(const Engine& engine) {
  const std::vector<int32_t> ids =
      engine.encode("<|vision_start|><|image_pad|><|vision_end|>", false);
  if (ids.size() != 3)
    throw std::runtime_error(
        "the model's tokenizer has no <|vision_start|>, <|image_pad|> and "
        "<|vision_end|> special tokens");
  return ids;
}

}  // namespace

BenchImages make_bench_images(Engine& engine, const BenchImageOptions& o,
                              std::vector<std::vector<int32_t>>& prompts, std::mt19937& rng) {
  if (!engine.supports_images())
    throw std::runtime_error(
        "--image-size: the model takes no images (a GGUF model needs --mmproj)");
  const auto [width, height] = parse_size(o.size.empty() ? "448x448" : o.size);
  const int per_prompt = std::max(1, o.per_prompt);
  const std::vector<int32_t> placeholder = placeholder_tokens(engine);
  BenchImages out;
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  const auto start = std::chrono::steady_clock::now();
  for (auto& prompt : prompts) {
    // Random text must not contain the image marker tokens themselves; any other id will do.
    constexpr int32_t kPlainToken = 3;
    const auto is_placeholder = [&](int32_t t) {
      return std::find(placeholder.begin(), placeholder.end(), t) != placeholder.end();
    };
    std::replace_if(prompt.begin(), prompt.end(), is_placeholder, kPlainToken);
    auto& images = out.per_prompt.emplace_back();
    for (int i = 0; i < per_prompt; ++i) {
      for (uint8_t& v : rgb) v = static_cast<uint8_t>(byte(rng));
      images.push_back(engine.prepare_image_rgb(rgb, width, height));
      out.num_image_tokens += images.back().num_tokens;
      prompt.insert(prompt.begin() + 1, placeholder.begin(), placeholder.end());
    }
    out.num_images += per_prompt;
  }
  out.prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace pagedllm
