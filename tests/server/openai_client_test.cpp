// The official `openai` npm client (installed by `make test-deps`) talks to the server.
#include "cli/cli_runner.h"
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

TEST(OpenAINodeClient, StreamsChatAndCompletionsAndParsesTypedResponses) {
  ServerProcess s("--model " + stories_gguf() + " --chat-template " + chatml_template() +
                  " --threads 1 --served-model-name stories");
  const std::string script = std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/openai_client.mjs";
  const std::string cmd =
      "node " + script + " http://127.0.0.1:" + std::to_string(s.port()) + "/v1 stories";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(pipe), 0) << out;
  const ojson r = ojson::parse(out);

  const HttpReply direct =
      post(s, "/v1/completions",
           ojson{{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}});
  const std::string expected = direct.json["choices"][0]["text"];
  EXPECT_EQ(r["completion_text"], expected);
  EXPECT_EQ(r["streamed_completion"], expected);
  EXPECT_EQ(r["completion_finish"], "length");
  EXPECT_EQ(r["streamed_completion_finish"], "length");
  EXPECT_EQ(r["completion_usage"]["completion_tokens"], 24);
  EXPECT_EQ(r["streamed_completion_usage"]["completion_tokens"], 24);
  EXPECT_EQ(r["streamed_completion_usage"]["total_tokens"], r["completion_usage"]["total_tokens"]);
  EXPECT_FALSE(r["chat_text"].get<std::string>().empty());
  EXPECT_EQ(r["streamed_chat"], r["chat_text"]);
  EXPECT_EQ(r["chat_role"], "assistant");
  EXPECT_EQ(r["streamed_chat_role"], "assistant");
  EXPECT_EQ(r["streamed_chat_finish"], "length");
  EXPECT_EQ(r["chat_usage"]["completion_tokens"], 20);
  EXPECT_EQ(r["model_ids"], ojson::array({"stories"}));
  EXPECT_EQ(r["error_status"], 400);
}

}  // namespace
}  // namespace pagedllm::test
