#include "server/chat_images.h"

#include <algorithm>
#include <stdexcept>

#include "server/api_error.h"

namespace pagedllm::server {

using ojson = nlohmann::ordered_json;

int parse_limit_mm_per_prompt(const std::string& json_text) {
  const ojson j = ojson::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw std::invalid_argument(
        "--limit-mm-per-prompt must be a JSON object such as {\"image\": 2}");
  int limit = ChatImageOptions{}.limit_per_prompt;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "image")
      throw std::invalid_argument("--limit-mm-per-prompt: '" + it.key() +
                                  "' is not supported; only images are");
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1000000)
      throw std::invalid_argument(
          "--limit-mm-per-prompt: image must be an integer in [0, 1000000]");
    limit = it->get<int>();
  }
  return limit;
}

void check_chat_images(const ChatRequest& r, bool model_takes_images, int limit_per_prompt) {
  const size_t n = r.image_urls.size();
  if (n == 0) return;
  if (!model_takes_images) {
    throw bad_request(
        "this model takes no images: it has no vision encoder (a GGUF model needs the server "
        "started with --mmproj)",
        "messages");
  }
  if (n > static_cast<size_t>(limit_per_prompt)) {
    throw bad_request("At most " + std::to_string(limit_per_prompt) +
                          " image(s) may be provided in one prompt (--limit-mm-per-prompt); " +
                          std::to_string(n) + " were given",
                      "messages");
  }
}

ojson messages_with_placeholder_text(const ojson& messages) {
  ojson out = messages;
  for (ojson& m : out) {
    auto content = m.find("content");
    if (content == m.end() || !content->is_array()) continue;
    std::vector<std::string> pieces;
    std::string text;
    for (const ojson& part : *content) {
      if (part["type"] == "image") {
        pieces.emplace_back(kImagePlaceholderText);
      } else {
        if (!text.empty()) text += "\n";
        text += part["text"].get<std::string>();
      }
    }
    pieces.push_back(text);
    std::string joined;
    for (size_t i = 0; i < pieces.size(); ++i) joined += (i ? "\n" : "") + pieces[i];
    *content = joined;
  }
  return out;
}

void check_image_placeholders(const std::vector<int32_t>& ids, int32_t image_pad_id,
                              size_t num_images) {
  const auto pads = static_cast<size_t>(std::count(ids.begin(), ids.end(), image_pad_id));
  if (pads == num_images) return;
  throw bad_request("the prompt holds " + std::to_string(pads) + " <|image_pad|> token(s) for " +
                        std::to_string(num_images) +
                        " image(s): the chat template must write one per image, and the text "
                        "may not contain it",
                    "messages");
}

std::vector<ImageInput> prepare_chat_images(const ChatRequest& r, const Engine& engine,
                                            const ImageSourceOptions& source) {
  std::vector<ImageInput> images;
  for (size_t i = 0; i < r.image_urls.size(); ++i) {
    const std::string which = "image " + std::to_string(i + 1) + ": ";
    std::vector<uint8_t> bytes;
    try {
      bytes = read_image_url(r.image_urls[i], source);
    } catch (const ImageSourceError& e) {
      throw bad_request(which + e.what(), "messages");
    }
    try {
      images.push_back(engine.prepare_image(bytes, r.image_options));
    } catch (const std::invalid_argument& e) {
      throw bad_request(which + e.what(), "messages");
    }
  }
  return images;
}

int64_t expanded_prompt_length(size_t num_ids, const std::vector<ImageInput>& images) {
  int64_t length = static_cast<int64_t>(num_ids);
  for (const ImageInput& image : images) length += image.num_tokens - 1;
  return length;
}

}  // namespace pagedllm::server
