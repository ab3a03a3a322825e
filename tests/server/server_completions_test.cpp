// /v1/completions and /v1/chat/completions through a live server: greedy output equals
// `pagedllm generate`, streamed or not, for every prompt form, n > 1 and many clients at once.
#include <future>

#include "cli/cli_runner.h"
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

const std::vector<std::string> kPrompts = {"Once upon a time", "The little dog", "Lily and Ben",
                                           "One day, a big"};

class ServerCompletions : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess("--model " + stories_gguf() + " --chat-template " +
                                chatml_template() + " --threads 1");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  // `pagedllm generate --json` for these prompts: one object per prompt.
  static std::vector<ojson> generate(const std::vector<std::string>& prompts, int max_tokens,
                                     const std::string& extra = "") {
    std::string lines;
    for (const auto& p : prompts) lines += ojson{{"prompt", p}}.dump() + "\n";
    const std::string file = write_temp("server_prompts.jsonl", lines);
    const CliResult r = run_cli("generate --model " + stories_gguf() + " --prompts-file " + file +
                                " --json --temperature 0 --threads 1 --max-tokens " +
                                std::to_string(max_tokens) + " " + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<ojson> out;
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line)) out.push_back(ojson::parse(line));
    return out;
  }

  static std::string stream_text(const StreamReply& r, size_t index = 0) {
    std::string text;
    for (const auto& e : r.events)
      for (const auto& c : e["choices"])
        if (c["index"] == index)
          text +=
              c.contains("text") ? c["text"].get<std::string>() : c["delta"].value("content", "");
    return text;
  }

  static ServerProcess* server_;
};

ServerProcess* ServerCompletions::server_ = nullptr;

TEST_F(ServerCompletions, GreedyCompletionEqualsGenerateStreamedOrNot) {
  const auto expected = generate(kPrompts, 40);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const ojson body = {{"prompt", kPrompts[i]}, {"max_tokens", 40}, {"temperature", 0}};
    const HttpReply r = post(*server_, "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json["object"], "text_completion");
    EXPECT_EQ(r.json["choices"][0]["text"], expected[i]["text"]);
    EXPECT_EQ(r.json["choices"][0]["finish_reason"], expected[i]["finish_reason"]);
    EXPECT_EQ(r.json["usage"]["completion_tokens"], expected[i]["token_ids"].size());
    EXPECT_EQ(r.json["usage"]["prompt_tokens"], expected[i]["prompt_token_ids"].size());

    ojson streamed = body;
    streamed["stream"] = true;
    streamed["stream_options"] = {{"include_usage", true}};
    const StreamReply s = post_stream(*server_, "/v1/completions", streamed);
    ASSERT_EQ(s.status, 200);
    EXPECT_TRUE(s.done);
    EXPECT_EQ(stream_text(s), expected[i]["text"]);
    ASSERT_GE(s.events.size(), 2u);
    EXPECT_EQ(s.events.back()["choices"].size(), 0u);
    EXPECT_EQ(s.events.back()["usage"]["completion_tokens"], expected[i]["token_ids"].size());
    EXPECT_EQ(s.events[s.events.size() - 2]["choices"][0]["finish_reason"],
              expected[i]["finish_reason"]);
  }
}

TEST_F(ServerCompletions, EveryPromptFormGivesTheSameTokens) {
  const auto expected = generate({kPrompts[0], kPrompts[1]}, 20);
  const auto ids0 = expected[0]["prompt_token_ids"], ids1 = expected[1]["prompt_token_ids"];
  for (const ojson& prompt : {ojson(kPrompts[0]), ojson::array({kPrompts[0], kPrompts[1]}), ids0,
                              ojson::array({ids0, ids1})}) {
    const HttpReply r = post(*server_, "/v1/completions",
                             ojson{{"prompt", prompt}, {"max_tokens", 20}, {"temperature", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    const auto& choices = r.json["choices"];
    ASSERT_EQ(choices.size(), prompt.is_array() && !prompt[0].is_number() ? 2u : 1u);
    for (size_t i = 0; i < choices.size(); ++i) {
      EXPECT_EQ(choices[i]["index"], i);
      EXPECT_EQ(choices[i]["text"], expected[i]["text"]) << prompt.dump();
    }
  }
}

TEST_F(ServerCompletions, NChoicesAreGreedyCopiesOrDistinctSeededSamples) {
  const auto expected = generate({kPrompts[0]}, 24);
  const HttpReply greedy =
      post(*server_, "/v1/completions",
           ojson{{"prompt", kPrompts[0]}, {"max_tokens", 24}, {"temperature", 0}, {"n", 3}});
  ASSERT_EQ(greedy.status, 200) << greedy.body;
  ASSERT_EQ(greedy.json["choices"].size(), 3u);
  for (const auto& c : greedy.json["choices"]) EXPECT_EQ(c["text"], expected[0]["text"]);
  EXPECT_EQ(greedy.json["usage"]["completion_tokens"], 3 * expected[0]["token_ids"].size());
  EXPECT_EQ(greedy.json["usage"]["prompt_tokens"], expected[0]["prompt_token_ids"].size());

  const ojson sampled = {
      {"prompt", kPrompts[0]}, {"max_tokens", 24}, {"temperature", 1.0}, {"n", 4}, {"seed", 7}};
  const HttpReply a = post(*server_, "/v1/completions", sampled);
  const HttpReply b = post(*server_, "/v1/completions", sampled);
  ASSERT_EQ(a.status, 200);
  std::set<std::string> texts;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a.json["choices"][i]["text"], b.json["choices"][i]["text"]);
    texts.insert(a.json["choices"][i]["text"].get<std::string>());
  }
  EXPECT_GE(texts.size(), 3u);

  ojson streamed = sampled;
  streamed["stream"] = true;
  const StreamReply s = post_stream(*server_, "/v1/completions", streamed);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(stream_text(s, i), a.json["choices"][i]["text"]);
}

TEST_F(ServerCompletions, BestOfReturnsTheNMostLikelyCandidates) {
  const HttpReply r = post(*server_, "/v1/completions",
                           ojson{{"prompt", kPrompts[2]},
                                 {"max_tokens", 12},
                                 {"temperature", 1.0},
                                 {"n", 2},
                                 {"best_of", 5},
                                 {"seed", 3},
                                 {"logprobs", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["choices"].size(), 2u);
  auto total = [](const ojson& c) {
    double sum = 0;
    for (const auto& lp : c["logprobs"]["token_logprobs"]) sum += lp.get<double>();
    return sum;
  };
  EXPECT_GE(total(r.json["choices"][0]), total(r.json["choices"][1]));
  EXPECT_EQ(post(*server_, "/v1/completions",
                 ojson{{"prompt", "x"}, {"n", 1}, {"best_of", 2}, {"stream", true}})
                .status,
            400);
}

TEST_F(ServerCompletions, StopStringsEndTheTextAcrossTokenBoundariesStreamedOrNot) {
  const std::string full = generate({kPrompts[0]}, 60)[0]["text"];
  // A stop string that starts mid-token and spans several tokens.
  const size_t at = full.find("named");
  ASSERT_NE(at, std::string::npos) << full;
  const std::string stop = full.substr(at + 2, 9);
  const std::string before = full.substr(0, at + 2);
  for (bool include : {false, true}) {
    const ojson body = {{"prompt", kPrompts[0]},
                        {"max_tokens", 60},
                        {"temperature", 0},
                        {"stop", {"zzz", stop}},
                        {"include_stop_str_in_output", include}};
    const std::string want = include ? before + stop : before;
    const HttpReply r = post(*server_, "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json["choices"][0]["text"], want);
    EXPECT_EQ(r.json["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(r.json["choices"][0]["stop_reason"], stop);
    ojson streamed = body;
    streamed["stream"] = true;
    const StreamReply s = post_stream(*server_, "/v1/completions", streamed);
    EXPECT_EQ(stream_text(s), want);
    // No chunk ever carried text past the stop.
    std::string sent;
    for (const auto& e : s.events) {
      sent += e["choices"][0]["text"].get<std::string>();
      EXPECT_EQ(want.rfind(sent, 0), 0u) << sent;
    }
  }
}

TEST_F(ServerCompletions, StopTokenIdsAndLogprobsReportTheirTokens) {
  const auto expected = generate({kPrompts[0]}, 30);
  const int32_t stop_id = expected[0]["token_ids"][5];
  const HttpReply r = post(*server_, "/v1/completions",
                           ojson{{"prompt", kPrompts[0]},
                                 {"max_tokens", 30},
                                 {"temperature", 0},
                                 {"stop_token_ids", {stop_id}},
                                 {"logprobs", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto& c = r.json["choices"][0];
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_EQ(c["stop_reason"], stop_id);
  const auto& lp = c["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u);
  EXPECT_EQ(r.json["usage"]["completion_tokens"], 6);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_EQ(lp["top_logprobs"][i].size(), 2u);
    // Greedy: the sampled token is the most likely one.
    double best = -1e9;
    for (auto& [tok, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), best, 1e-5);
    EXPECT_EQ(lp["text_offset"][i], joined.size());
    joined += lp["tokens"][i].get<std::string>();
  }
}

TEST_F(ServerCompletions, EchoPrependsThePrompt) {
  const HttpReply r =
      post(*server_, "/v1/completions",
           ojson{{"prompt", kPrompts[1]}, {"max_tokens", 8}, {"temperature", 0}, {"echo", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.json["choices"][0]["text"];
  EXPECT_EQ(text.rfind(kPrompts[1], 0), 0u);
  EXPECT_GT(text.size(), kPrompts[1].size());
}

TEST_F(ServerCompletions, ChatRendersTheTemplateAndMatchesGenerateOnTheRenderedPrompt) {
  const ojson messages = {{{"role", "system"}, {"content", "You tell stories."}},
                          {{"role", "user"}, {"content", "Tell me about a cat."}}};
  const HttpReply tok = post(*server_, "/tokenize", ojson{{"messages", messages}});
  ASSERT_EQ(tok.status, 200) << tok.body;
  std::string ids;
  for (const auto& t : tok.json["tokens"])
    ids += (ids.empty() ? "" : ",") + std::to_string(t.get<int>());
  const CliResult g = run_cli("generate --model " + stories_gguf() + " --prompt-ids " + ids +
                              " --json --temperature 0 --threads 1 --max-tokens 30");
  ASSERT_EQ(g.code, 0) << g.err;
  const ojson expected = ojson::parse(g.out);

  const ojson body = {{"messages", messages}, {"max_completion_tokens", 30}, {"temperature", 0}};
  const HttpReply r = post(*server_, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["object"], "chat.completion");
  EXPECT_EQ(r.json["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r.json["choices"][0]["message"]["content"], expected["text"]);
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], tok.json["count"]);

  ojson streamed = body;
  streamed["stream"] = true;
  streamed["logprobs"] = true;
  streamed["top_logprobs"] = 1;
  const StreamReply s = post_stream(*server_, "/v1/chat/completions", streamed);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.events.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(s.events.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(stream_text(s), expected["text"]);
  size_t logprob_entries = 0;
  for (const auto& e : s.events)
    if (e["choices"][0]["logprobs"].is_object())
      logprob_entries += e["choices"][0]["logprobs"]["content"].size();
  EXPECT_EQ(logprob_entries, expected["token_ids"].size());
}

TEST_F(ServerCompletions, SixtyFourConcurrentClientsEachGetTheirGreedyText) {
  std::vector<std::string> prompts;
  for (int i = 0; i < 64; ++i)
    prompts.push_back(kPrompts[i % kPrompts.size()] + std::string(i / 4, ' ') + "and");
  const auto expected = generate(prompts, 32);
  std::vector<std::future<std::string>> replies;
  for (int i = 0; i < 64; ++i) {
    replies.push_back(std::async(std::launch::async, [&, i] {
      const ojson body = {
          {"prompt", prompts[i]}, {"max_tokens", 32}, {"temperature", 0}, {"stream", i % 2 == 0}};
      if (i % 2 == 0) return stream_text(post_stream(*server_, "/v1/completions", body));
      const HttpReply r = post(*server_, "/v1/completions", body);
      return r.status == 200 ? r.json["choices"][0]["text"].get<std::string>() : r.body;
    }));
  }
  for (int i = 0; i < 64; ++i) EXPECT_EQ(replies[i].get(), expected[i]["text"]) << i;
}

TEST_F(ServerCompletions, StreamedTextIsWholeUtf8AndEqualsTheUnstreamedText) {
  // Hot sampling over a byte-fallback vocabulary produces multi-byte characters split over
  // tokens; the stream must never cut one and must add up to the same text.
  for (int seed = 0; seed < 6; ++seed) {
    const ojson body = {{"prompt", "Über café 日本 "},
                        {"max_tokens", 120},
                        {"temperature", 2.0},
                        {"seed", seed},
                        {"ignore_eos", true}};
    const HttpReply r = post(*server_, "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    ojson streamed = body;
    streamed["stream"] = true;
    const StreamReply s = post_stream(*server_, "/v1/completions", streamed);
    EXPECT_EQ(stream_text(s), r.json["choices"][0]["text"]) << seed;
  }
  const HttpReply echo =
      post(*server_, "/v1/completions",
           ojson{{"prompt", "Über café 日本"}, {"max_tokens", 1}, {"echo", true}});
  EXPECT_EQ(echo.json["choices"][0]["text"].get<std::string>().rfind("Über café 日本", 0), 0u);
}

}  // namespace
}  // namespace pagedllm::test
