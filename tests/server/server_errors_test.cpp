// Every bad request gets its status and OpenAI-shaped error JSON, and the server keeps serving.
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

void expect_error(const HttpReply& r, int status, const std::string& type,
                  const std::string& context) {
  EXPECT_EQ(r.status, status) << context << ": " << r.body;
  ASSERT_TRUE(r.json.is_object()) << context << ": " << r.body;
  ASSERT_TRUE(r.json.contains("error")) << context;
  const auto& e = r.json["error"];
  EXPECT_EQ(e["type"], type) << context;
  EXPECT_EQ(e["code"], status) << context;
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << context;
  EXPECT_TRUE(e.contains("param")) << context;
}

bool still_serves(const ServerProcess& s) {
  const HttpReply r =
      post(s, "/v1/completions", ojson{{"prompt", "Once"}, {"max_tokens", 3}, {"temperature", 0}});
  return r.status == 200 && r.json["usage"]["completion_tokens"] == 3;
}

class ServerErrors : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess("--model " + stories_gguf() +
                                " --threads 1 --max-model-len 256 --served-model-name tiny");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess* server_;
};

ServerProcess* ServerErrors::server_ = nullptr;

TEST_F(ServerErrors, BadRequestsGet400AndTheServerKeepsServing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/completions", "{not json"},
      {"/v1/completions", "[1, 2]"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": -1})"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": "ten"})"},
      {"/v1/completions", R"({"prompt": "x", "temperature": 9})"},
      {"/v1/completions", R"({"prompt": "x", "n": 0})"},
      {"/v1/completions", R"({"prompt": [1, 2, 100000]})"},
      {"/v1/completions", R"({"prompt": "x", "top_p": 1.5})"},
      {"/v1/completions", R"({"prompt": "x", "stop": {"a": 1}})"},
      {"/v1/completions", R"({"prompt": "x", "stream": 1})"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": 100000})"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})"},
      {"/v1/chat/completions", R"({"messages": "hi"})"},
      {"/tokenize", R"({"tokens": [1]})"},
      {"/detokenize", R"({"tokens": [1, 99999]})"},
  };
  for (const auto& [path, body] : cases) {
    expect_error(post(*server_, path, body), 400, "BadRequestError", path + " " + body);
  }
  EXPECT_TRUE(still_serves(*server_));
}

// A model without a vision encoder refuses images with 400 before anything is fetched.
TEST_F(ServerErrors, ImagesSentToATextOnlyModelAre400) {
  const ojson body = {
      {"messages",
       {{{"role", "user"},
         {"content",
          {{{"type", "image_url"}, {"image_url", {{"url", "http://127.0.0.1:1/x.png"}}}},
           {{"type", "text"}, {"text", "hi"}}}}}}}};
  const HttpReply r = post(*server_, "/v1/chat/completions", body);
  expect_error(r, 400, "BadRequestError", "image to a text-only model");
  EXPECT_NE(r.body.find("takes no images"), std::string::npos) << r.body;
  EXPECT_EQ(r.json["error"]["param"], "messages");
  EXPECT_TRUE(still_serves(*server_));
}

// A prompt too long to fit whatever its tokens is refused before it is tokenized, with the
// numbers that prove it.
TEST_F(ServerErrors, APromptThatCannotFitIsRefusedBeforeTokenizing) {
  const std::string huge(400000, 'a');
  for (const std::string& path :
       {std::string("/v1/completions"), std::string("/v1/chat/completions")}) {
    const ojson body = path == "/v1/completions"
                           ? ojson{{"prompt", huge}}
                           : ojson{{"messages", {{{"role", "user"}, {"content", huge}}}}};
    const HttpReply r = post(*server_, path, body);
    if (path == "/v1/chat/completions" && r.status == 400 &&
        r.json["error"]["message"].get<std::string>().find("chat template") != std::string::npos) {
      continue;  // this server has no chat template
    }
    expect_error(r, 400, "BadRequestError", path);
    const std::string message = r.json["error"]["message"];
    EXPECT_NE(message.find("refused before tokenizing"), std::string::npos) << message;
    EXPECT_NE(message.find("400000 bytes"), std::string::npos) << message;
  }
  EXPECT_TRUE(still_serves(*server_));
}

// Each refusal is logged at info level with its route, client, status and reason, and without
// the prompt's text.
TEST_F(ServerErrors, RejectedRequestsAreLoggedWithoutTheirPrompt) {
  const std::string secret = "zebra-secret-prompt-words";
  auto rejections = [](const std::string& log) {
    size_t n = 0;
    for (size_t at = 0; (at = log.find("rejected request #", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  const size_t before = rejections(server_->stderr_text());
  expect_error(post(*server_, "/v1/completions", ojson{{"prompt", secret}, {"max_tokens", -1}}),
               400, "BadRequestError", "negative max_tokens");
  // The line is written once the response has gone out: wait for it.
  std::string log = server_->stderr_text();
  for (int i = 0; i < 200 && rejections(log) == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    log = server_->stderr_text();
  }
  ASSERT_EQ(rejections(log), before + 1) << log;
  const size_t at = log.rfind("rejected request #");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("POST /v1/completions from 127.0.0.1:"), std::string::npos) << line;
  EXPECT_NE(line.find("-> 400 "), std::string::npos) << line;
  EXPECT_NE(line.find("max_tokens"), std::string::npos) << line;
  EXPECT_EQ(log.find(secret), std::string::npos) << "the prompt reached the log";
}

TEST_F(ServerErrors, ContextOverflowNamesTheNumbers) {
  const HttpReply r =
      post(*server_, "/v1/completions", ojson{{"prompt", "Once upon a time"}, {"max_tokens", 300}});
  expect_error(r, 400, "BadRequestError", "overflow");
  const std::string message = r.json["error"]["message"];
  EXPECT_NE(message.find("256"), std::string::npos) << message;
  EXPECT_NE(message.find("305"), std::string::npos) << message;  // 5 prompt + 300
  EXPECT_NE(message.find("300"), std::string::npos) << message;
  // Without max_tokens, a chat-like request may use the rest of the context.
  std::vector<int> ids(250, 300);
  const HttpReply fits = post(*server_, "/v1/completions", ojson{{"prompt", ids}});
  EXPECT_EQ(fits.status, 200) << fits.body;
  EXPECT_EQ(fits.json["usage"]["completion_tokens"].get<int>() <= 6, true);
  std::vector<int> too_long(256, 300);
  expect_error(post(*server_, "/v1/completions", ojson{{"prompt", too_long}}), 400,
               "BadRequestError", "prompt at the limit");
}

TEST_F(ServerErrors, UnknownRoutesAndModelsAre404) {
  expect_error(get(*server_, "/v2/nothing"), 404, "NotFoundError", "route");
  expect_error(post(*server_, "/v1/embeddings", std::string("{}")), 404, "NotFoundError", "route");
  expect_error(post(*server_, "/v1/completions", ojson{{"model", "gpt-9"}, {"prompt", "x"}}), 404,
               "NotFoundError", "model");
  const HttpReply ok = post(*server_, "/v1/completions",
                            ojson{{"model", "tiny"}, {"prompt", "x"}, {"max_tokens", 2}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json["model"], "tiny");
}

TEST_F(ServerErrors, BodiesOverTheLimitAre413) {
  const std::string big = R"({"prompt": ")" + std::string(9u << 20, 'a') + R"("})";
  expect_error(post(*server_, "/v1/completions", big), 413, "RequestEntityTooLargeError", "413");
  EXPECT_TRUE(still_serves(*server_));
}

TEST_F(ServerErrors, UnknownFieldsAreIgnoredWithAWarning) {
  const HttpReply r = post(*server_, "/v1/completions",
                           ojson{{"prompt", "x"}, {"max_tokens", 2}, {"frobnicate", true}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(server_->stderr_text().find("frobnicate"), std::string::npos);
}

TEST_F(ServerErrors, InfoEndpointsAnswer) {
  EXPECT_EQ(get(*server_, "/health").status, 200);
  const HttpReply v = get(*server_, "/version");
  EXPECT_EQ(v.status, 200);
  EXPECT_TRUE(v.json["version"].is_string());
  const HttpReply m = get(*server_, "/v1/models");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.json["object"], "list");
  EXPECT_EQ(m.json["data"][0]["id"], "tiny");
  EXPECT_EQ(m.json["data"][0]["max_model_len"], 256);
  const HttpReply t = post(*server_, "/tokenize", ojson{{"prompt", "Once upon a time"}});
  ASSERT_EQ(t.status, 200);
  EXPECT_EQ(t.json["count"], t.json["tokens"].size());
  EXPECT_EQ(t.json["tokens"][0], 1);  // BOS
  const HttpReply d = post(*server_, "/detokenize", ojson{{"tokens", t.json["tokens"]}});
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(d.json["prompt"], "Once upon a time");
  const HttpReply metrics = get(*server_, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("# TYPE pagedllm:time_to_first_token_seconds histogram"),
            std::string::npos);
}

TEST(ServerAccess, ApiKeyGuardsTheV1Routes) {
  ServerProcess s("--model " + stories_gguf() + " --threads 1 --api-key sekret");
  const std::string body = R"({"prompt": "x", "max_tokens": 2})";
  expect_error(post(s, "/v1/completions", body), 401, "AuthenticationError", "no key");
  expect_error(post(s, "/v1/completions", body, {{"Authorization", "Bearer wrong"}}), 401,
               "AuthenticationError", "wrong key");
  expect_error(get(s, "/v1/models"), 401, "AuthenticationError", "models");
  EXPECT_EQ(post(s, "/v1/completions", body, {{"Authorization", "Bearer sekret"}}).status, 200);
  EXPECT_EQ(get(s, "/health").status, 200);
}

TEST(ServerAccess, CorsAnswersOnlyTheAllowedOrigins) {
  ServerProcess s("--model " + stories_gguf() +
                  " --threads 1 --allowed-origins http://a.example,http://b.example");
  auto c = s.client();
  auto pre = c.Options("/v1/completions",
                       {{"Origin", "http://a.example"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://a.example");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  const HttpReply allowed = get(s, "/v1/models", {{"Origin", "http://b.example"}});
  EXPECT_EQ(allowed.header("Access-Control-Allow-Origin"), "http://b.example");
  const HttpReply other = get(s, "/v1/models", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.header("Access-Control-Allow-Origin"), "");

  ServerProcess closed("--model " + stories_gguf() + " --threads 1");
  EXPECT_EQ(get(closed, "/v1/models", {{"Origin", "http://a.example"}})
                .header("Access-Control-Allow-Origin"),
            "");
}

TEST(ServerAccess, ChatWithoutATemplateIs400) {
  ServerProcess s("--model " + stories_gguf() + " --threads 1");
  const HttpReply r =
      post(s, "/v1/chat/completions", ojson{{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  expect_error(r, 400, "BadRequestError", "no template");
  EXPECT_NE(r.json["error"]["message"].get<std::string>().find("chat template"), std::string::npos);
}

}  // namespace
}  // namespace pagedllm::test
