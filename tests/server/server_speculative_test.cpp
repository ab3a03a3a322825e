// A server with --speculative-config: completions, streamed or not and with stop strings that
// end mid-step, are those of a server without it; /metrics counts the drafts.
#include "cli/cli_runner.h"
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

constexpr const char* kSpeculative =
    R"('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1}')";

std::string completion_text(const ServerProcess& server, const ojson& body) {
  const HttpReply r = post(server, "/v1/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? r.json["choices"][0]["text"].get<std::string>() : "";
}

std::string streamed_text(const ServerProcess& server, ojson body) {
  body["stream"] = true;
  const StreamReply s = post_stream(server, "/v1/completions", body);
  EXPECT_TRUE(s.done);
  std::string text;
  for (const auto& e : s.events)
    for (const auto& c : e["choices"]) text += c["text"].get<std::string>();
  return text;
}

TEST(ServerSpeculative, CompletionsEqualAServerWithoutItAndMetricsCountTheDrafts) {
  const std::string base = "--model " + stories_gguf() + " --threads 1";
  ServerProcess plain(base);
  ServerProcess spec(base + " --speculative-config " + kSpeculative);
  // A story, then its opening again: the model retells it, and prompt lookup finds the spans.
  const std::string story = completion_text(
      plain, {{"prompt", "Once upon a time"}, {"max_tokens", 80}, {"temperature", 0}});
  const std::string prompt = "Once upon a time" + story + "\nOnce upon a time";
  for (const ojson& body :
       {ojson{{"prompt", prompt}, {"max_tokens", 60}, {"temperature", 0}},
        ojson{{"prompt", prompt}, {"max_tokens", 60}, {"temperature", 0.8}, {"seed", 5}},
        ojson{{"prompt", "Lily and Ben"}, {"max_tokens", 40}, {"temperature", 0}}}) {
    const std::string want = completion_text(plain, body);
    EXPECT_EQ(completion_text(spec, body), want) << body.dump();
    EXPECT_EQ(streamed_text(spec, body), want) << body.dump();
    // A stop string in the middle of the answer ends it there, though the step that produced
    // it may have produced tokens past it.
    const std::string stop = want.substr(want.size() / 2, 6);
    ojson stopped = body;
    stopped["stop"] = {stop};
    EXPECT_EQ(completion_text(spec, stopped), want.substr(0, want.find(stop))) << stop;
    EXPECT_EQ(streamed_text(spec, stopped), want.substr(0, want.find(stop))) << stop;
  }
  const std::string metrics = get(spec, "/metrics").body;
  const double drafts = metric(metrics, "pagedllm:spec_decode_num_draft_tokens_total");
  const double accepted = metric(metrics, "pagedllm:spec_decode_num_accepted_tokens_total");
  EXPECT_GT(drafts, 0) << metrics;
  EXPECT_GT(accepted, 0) << metrics;
  EXPECT_LE(accepted, drafts);
  EXPECT_EQ(metric(get(plain, "/metrics").body, "pagedllm:spec_decode_num_draft_tokens_total"), 0);
}

}  // namespace
}  // namespace pagedllm::test
