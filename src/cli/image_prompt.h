// The prompt of `pagedllm generate --image FILE ... --prompt TEXT`: one user message of the image
// parts then the text, through the model's chat template (or the placeholders before the text
// when the model has none), and the images read and prepared for the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pagedllm/engine.h"

namespace pagedllm::cli {

struct ImagePrompt {
  std::string text;                // as rendered
  std::vector<int32_t> token_ids;  // one <|image_pad|> per image
  std::vector<ImageInput> images;
};

// Throws std::runtime_error naming the file and the problem (unreadable, not an image, a model
// without a vision encoder).
ImagePrompt build_image_prompt(const Engine& engine, const std::string& text,
                               const std::vector<std::string>& image_files);

}  // namespace pagedllm::cli
