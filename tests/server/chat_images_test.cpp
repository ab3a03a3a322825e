// The model-independent parts of images in chat: the limit flag, the placeholder fallback for
// templates that take strings, and the checks that answer 400.
#include "server/chat_images.h"

#include <gtest/gtest.h>

#include <functional>

#include "server/api_error.h"

namespace pagedllm::server {
namespace {

using ojson = nlohmann::ordered_json;

TEST(ChatImages, LimitMmPerPromptReadsVllmsJson) {
  EXPECT_EQ(parse_limit_mm_per_prompt(R"({"image": 3})"), 3);
  EXPECT_EQ(parse_limit_mm_per_prompt(R"({"image": 0})"), 0);
  EXPECT_EQ(parse_limit_mm_per_prompt("{}"), 999);
  for (const char* bad : {R"({"video": 1})", R"({"image": -1})", R"({"image": "2"})", "[1]",
                          "image=2", R"({"image": 1.5})"}) {
    EXPECT_THROW(parse_limit_mm_per_prompt(bad), std::invalid_argument) << bad;
  }
}

TEST(ChatImages, PartsBecomePlaceholdersThenTextForStringTemplates) {
  const ojson messages = ojson::parse(R"([
      {"role": "system", "content": "s"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"},
                                   {"type": "text", "text": "b"}, {"type": "image"}]}])");
  const ojson out = messages_with_placeholder_text(messages);
  EXPECT_EQ(out[0]["content"], "s");
  EXPECT_EQ(out[1]["content"],
            "<|vision_start|><|image_pad|><|vision_end|>\n"
            "<|vision_start|><|image_pad|><|vision_end|>\na\nb");
  EXPECT_EQ(out[1]["role"], "user");
}

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "messages");
    return e.status();
  }
  return 200;
}

TEST(ChatImages, ImagesNeedAVisionModelAndStayWithinTheLimit) {
  ChatRequest r;
  EXPECT_EQ(status_of([&] { check_chat_images(r, false, 0); }), 200);  // no images: no check
  r.image_urls = {"data:,", "data:,"};
  EXPECT_EQ(status_of([&] { check_chat_images(r, false, 5); }), 400);
  EXPECT_EQ(status_of([&] { check_chat_images(r, true, 1); }), 400);
  EXPECT_EQ(status_of([&] { check_chat_images(r, true, 2); }), 200);
}

TEST(ChatImages, ThePromptMustHoldOnePadPerImage) {
  const int32_t pad = 7;
  EXPECT_EQ(status_of([&] { check_image_placeholders({1, 7, 2, 7}, pad, 2); }), 200);
  EXPECT_EQ(status_of([&] { check_image_placeholders({1, 7, 2}, pad, 2); }), 400);
  EXPECT_EQ(status_of([&] { check_image_placeholders({7, 7, 7}, pad, 2); }), 400);
}

TEST(ChatImages, ExpandedLengthWidensEachPad) {
  std::vector<ImageInput> images(2);
  images[0].num_tokens = 64;
  images[1].num_tokens = 6;
  EXPECT_EQ(expanded_prompt_length(20, images), 20 - 2 + 64 + 6);
  EXPECT_EQ(expanded_prompt_length(20, {}), 20);
}

}  // namespace
}  // namespace pagedllm::server
