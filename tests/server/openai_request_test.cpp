#include "server/openai_request.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace pagedllm::server {
namespace {

using ojson = nlohmann::ordered_json;

CompletionRequest completion(const std::string& body) {
  return parse_completion_request(parse_json_body(body));
}

// The status and param of the ApiError that parsing `body` throws.
std::pair<int, std::string> completion_error(const std::string& body) {
  try {
    completion(body);
  } catch (const ApiError& e) {
    return {e.status(), e.param()};
  }
  return {0, ""};
}

TEST(OpenAIRequest, AcceptsEveryPromptForm) {
  EXPECT_EQ(std::get<std::string>(completion(R"({"prompt": "hi"})").prompts.at(0)), "hi");
  auto two = completion(R"({"prompt": ["a", "b"]})").prompts;
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(std::get<std::string>(two[1]), "b");
  auto ids = completion(R"({"prompt": [1, 2, 3]})").prompts;
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(ids[0]), (std::vector<int32_t>{1, 2, 3}));
  auto nested = completion(R"({"prompt": [[1, 2], [3]]})").prompts;
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(nested[1]), (std::vector<int32_t>{3}));
}

TEST(OpenAIRequest, ReadsSamplingFieldsWithVllmNames) {
  auto r = completion(R"({"prompt": "x", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
      "top_k": 5, "min_p": 0.1, "seed": 42, "n": 2, "best_of": 3, "stop": "\n",
      "stop_token_ids": [2], "logprobs": 3, "echo": false, "presence_penalty": 0.5,
      "frequency_penalty": -0.5, "repetition_penalty": 1.1, "ignore_eos": true, "min_tokens": 2})");
  EXPECT_EQ(r.params.max_tokens, 7);
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_FLOAT_EQ(r.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.params.top_p, 0.9f);
  EXPECT_EQ(r.params.top_k, 5);
  EXPECT_FLOAT_EQ(r.params.min_p, 0.1f);
  EXPECT_EQ(r.params.seed, 42u);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.best_of, 3);
  EXPECT_EQ(r.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r.params.stop_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_FLOAT_EQ(r.params.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.params.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.params.repetition_penalty, 1.1f);
  EXPECT_TRUE(r.params.ignore_eos);
  EXPECT_EQ(r.params.min_tokens, 2);
}

TEST(OpenAIRequest, RejectsBadValuesWith400NamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt": "x", "max_tokens": -1})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": "10"})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 1.5})", "max_tokens"},
      {R"({"prompt": "x", "temperature": 2.5})", "temperature"},
      {R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {R"({"prompt": "x", "top_p": 0})", "top_p"},
      {R"({"prompt": "x", "n": 0})", "n"},
      {R"({"prompt": "x", "n": 2, "best_of": 1})", "best_of"},
      {R"({"prompt": "x", "stop": 5})", "stop"},
      {R"({"prompt": "x", "logprobs": 21})", "logprobs"},
      {R"({"prompt": "x", "stream": "yes"})", "stream"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options"},
      {R"({"prompt": "x", "min_tokens": 9, "max_tokens": 3})", "min_tokens"},
      {R"({"prompt": [1, -2]})", "prompt"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": [1, "a"]})", "prompt"},
      {R"({"prompt": {"a": 1}})", "prompt"},
      {R"({})", "prompt"},
      {R"({"prompt": "x", "model": 3})", "model"},
      {R"({"prompt": "x", "seed": 1e300})", "seed"},
      {R"({"prompt": "x", "max_tokens": 18446744073709551615})", "max_tokens"},
  };
  for (const auto& [body, param] : cases) {
    EXPECT_EQ(completion_error(body), std::make_pair(400, param)) << body;
  }
}

TEST(OpenAIRequest, MalformedJsonAndNonObjectsAre400) {
  for (const char* body : {"{", "[]", "\"x\"", "", "{\"prompt\": \"x\",}"}) {
    try {
      parse_json_body(body);
      ADD_FAILURE() << body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(error_json(e)["error"]["type"], "BadRequestError");
      EXPECT_EQ(error_json(e)["error"]["code"], 400);
    }
  }
}

TEST(OpenAIRequest, UnknownFieldsAreReportedNotRejected) {
  auto r = completion(R"({"prompt": "x", "frobnicate": 1, "user": "u"})");
  EXPECT_EQ(r.ignored, std::vector<std::string>{"frobnicate"});
}

TEST(OpenAIRequest, ChatFlattensTextPartsAndPrefersMaxCompletionTokens) {
  auto r = parse_chat_request(parse_json_body(R"({"messages": [
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_tokens": 3, "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2})"));
  EXPECT_EQ(r.messages[0]["content"], "a\nb");
  EXPECT_EQ(r.params.max_tokens, 9);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_TRUE(r.add_generation_prompt);
}

TEST(OpenAIRequest, ChatRejectsBadMessagesAndTopLogprobsWithoutLogprobs) {
  for (const char* body :
       {R"({"messages": []})", R"({"messages": [{"content": "x"}]})",
        R"({"messages": [{"role": "user", "content": 5}]})",
        R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
        R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})"}) {
    EXPECT_THROW(parse_chat_request(parse_json_body(body)), ApiError) << body;
  }
}

TEST(OpenAIRequest, ChatImagePartsStayPartsWithTheirUrlsInOrder) {
  auto r = parse_chat_request(parse_json_body(R"({"messages": [
      {"role": "system", "content": [{"type": "text", "text": "s"}]},
      {"role": "user", "content": [{"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA==", "detail": "low"}},
        {"image_url": "http://x/b.png"}, {"text": "and"}]},
      {"role": "user", "content": [{"type": "image_url", "image_url": "file:///c.png"}]}],
      "mm_processor_kwargs": {"min_pixels": 100, "max_pixels": 5000}})"));
  EXPECT_EQ(r.messages[0]["content"], "s");  // text-only content is still one string
  EXPECT_EQ(r.messages[1]["content"].dump(),
            R"([{"type":"text","text":"look"},{"type":"image"},{"type":"image"},)"
            R"({"type":"text","text":"and"}])");
  EXPECT_EQ(r.messages[2]["content"].dump(), R"([{"type":"image"}])");
  EXPECT_EQ(r.image_urls, (std::vector<std::string>{"data:image/png;base64,AA==", "http://x/b.png",
                                                    "file:///c.png"}));
  EXPECT_EQ(r.image_options.min_pixels, 100);
  EXPECT_EQ(r.image_options.max_pixels, 5000);
}

TEST(OpenAIRequest, ChatRejectsMalformedImagePartsAndProcessorKwargs) {
  for (const char* body :
       {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": 5}]}]})",
        R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
        R"({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]})",
        R"({"messages": [{"role": "user", "content": [{"type": 3}]}]})",
        R"({"messages": [{"role": "user", "content": ["text"]}]})",
        R"({"messages": [{"role": "user", "content": "x"}], "mm_processor_kwargs": 1})",
        R"({"messages": [{"role": "user", "content": "x"}], "mm_processor_kwargs": {"fps": 1}})",
        R"({"messages": [{"role": "user", "content": "x"}],
               "mm_processor_kwargs": {"min_pixels": 10, "max_pixels": 5}})",
        R"({"messages": [{"role": "user", "content": "x"}],
               "mm_processor_kwargs": {"max_pixels": 0}})"}) {
    EXPECT_THROW(parse_chat_request(parse_json_body(body)), ApiError) << body;
  }
}

TEST(OpenAIRequest, TokenizeTakesAPromptOrMessagesButNotBoth) {
  EXPECT_EQ(parse_tokenize_request(parse_json_body(R"({"prompt": "x"})")).prompt, "x");
  EXPECT_THROW(parse_tokenize_request(parse_json_body(R"({})")), ApiError);
  EXPECT_THROW(parse_tokenize_request(parse_json_body(
                   R"({"prompt": "x", "messages": [{"role": "user", "content": "y"}]})")),
               ApiError);
  EXPECT_EQ(parse_detokenize_request(parse_json_body(R"({"tokens": [5, 6]})")).tokens,
            (std::vector<int32_t>{5, 6}));
  EXPECT_THROW(parse_detokenize_request(parse_json_body(R"({"tokens": "5"})")), ApiError);
}

}  // namespace
}  // namespace pagedllm::server
