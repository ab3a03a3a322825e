// Images in chat requests: the checks that need the model, the placeholders a template that
// takes only strings gets, and the images fetched and prepared on the HTTP thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagedllm/engine.h"
#include "server/image_source.h"
#include "server/openai_request.h"

namespace pagedllm::server {

struct ChatImageOptions {
  ImageSourceOptions source;
  int limit_per_prompt = 999;  // vLLM's default for --limit-mm-per-prompt
};

// What Qwen2-VL's processor and chat template write for one image; the engine widens the pad.
inline constexpr std::string_view kImagePadText = "<|image_pad|>";
inline constexpr std::string_view kImagePlaceholderText =
    "<|vision_start|><|image_pad|><|vision_end|>";

// The image limit of --limit-mm-per-prompt '{"image": N}' (vLLM's flag); throws
// std::invalid_argument for anything else (another modality, a negative or missing count).
int parse_limit_mm_per_prompt(const std::string& json_text);

// 400 (param "messages") for images sent to a model without a vision encoder, or more images
// than the limit.
void check_chat_images(const ChatRequest& r, bool model_takes_images, int limit_per_prompt);

// vLLM's "string" content format, for a template that ignores image parts: each list of parts
// becomes one string, the image placeholders first, then the text parts joined by newlines.
nlohmann::ordered_json messages_with_placeholder_text(const nlohmann::ordered_json& messages);

// 400 (param "messages") unless the prompt holds one <|image_pad|> per image.
void check_image_placeholders(const std::vector<int32_t>& ids, int32_t image_pad_id,
                              size_t num_images);

// Reads and prepares each image (decoding, resizing) on the calling thread; 400 naming the
// image ("image 2: ...") for a URL that gives no bytes or bytes that are no usable image.
std::vector<ImageInput> prepare_chat_images(const ChatRequest& r, const Engine& engine,
                                            const ImageSourceOptions& source);

// The prompt's length once the engine widens each image's pad to its tokens.
int64_t expanded_prompt_length(size_t num_ids, const std::vector<ImageInput>& images);

}  // namespace pagedllm::server
