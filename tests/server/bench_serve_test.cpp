// `pagedllm bench serve` against a live server: counts, token totals and latency figures.
#include "cli/cli_runner.h"
#include "server/server_process.h"
#include "test_paths.h"

namespace pagedllm::test {
namespace {

ojson read_json(const std::string& path) {
  std::ifstream in(path);
  return ojson::parse(in);
}

TEST(BenchServe, RandomWorkloadCompletesWithExactTokenCountsAndLatencyFigures) {
  ServerProcess s("--model " + stories_gguf() + " --threads 1");
  const std::string result = test::temp_path("bench_serve_result.json");
  const CliResult r =
      run_cli("bench serve --base-url http://127.0.0.1:" + std::to_string(s.port()) +
              " --num-prompts 60 --random-input-len 48 --random-output-len 32 "
              "--random-vocab-size 512 --ignore-eos --request-rate 200 "
              "--max-concurrency 16 --goodput ttft:60000 --save-result " +
              result);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Serving Benchmark Result"), std::string::npos);
  const ojson j = read_json(result);
  EXPECT_EQ(j["completed"], 60);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_input_tokens"], 60 * 48);
  EXPECT_EQ(j["total_output_tokens"], 60 * 32);
  EXPECT_EQ(j["model"], "stories260K.gguf");
  EXPECT_EQ(j["max_concurrency"], 16);
  EXPECT_GT(j["ttft_ms"]["median"].get<double>(), 0.0);
  EXPECT_GE(j["ttft_ms"]["p99"].get<double>(), j["ttft_ms"]["median"].get<double>());
  EXPECT_GT(j["tpot_ms"]["mean"].get<double>(), 0.0);
  EXPECT_GT(j["itl_ms"]["p90"].get<double>(), 0.0);
  EXPECT_NEAR(j["request_goodput"].get<double>(), j["request_throughput"].get<double>(), 1e-9);
  EXPECT_NEAR(j["output_throughput"].get<double>() * j["duration"].get<double>(), 60 * 32, 1e-6);
  // The server saw the same tokens.
  const std::string m = get(s, "/metrics").body;
  EXPECT_EQ(metric(m, "pagedllm:generation_tokens_total"), 60 * 32);
  EXPECT_EQ(metric(m, "pagedllm:prompt_tokens_total"), 60 * 48);
}

// Without --random-vocab-size the benchmark asks the server for its vocabulary; requests the
// server refuses are counted by the server's own reason.
TEST(BenchServe, FindsTheVocabularyAndCountsRefusalsByTheServersReason) {
  ServerProcess s("--model " + stories_gguf() + " --threads 1 --max-model-len 256");
  const std::string base = "bench serve --base-url http://127.0.0.1:" + std::to_string(s.port());
  const std::string result = test::temp_path("bench_serve_vocab.json");
  const CliResult ok = run_cli(base +
                               " --num-prompts 8 --random-input-len 32 "
                               "--random-output-len 8 --ignore-eos --save-result " +
                               result);
  ASSERT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.err.find("vocabulary has 512 tokens"), std::string::npos) << ok.err;
  EXPECT_EQ(read_json(result)["completed"], 8);

  const CliResult refused = run_cli(base +
                                    " --num-prompts 5 --random-input-len 300 "
                                    "--random-output-len 8 --save-result " +
                                    result);
  EXPECT_NE(refused.code, 0);
  const ojson j = read_json(result);
  EXPECT_EQ(j["failed"], 5);
  ASSERT_EQ(j["failures_by_reason"].size(), 1u) << j.dump();
  const std::string reason = j["failures_by_reason"].begin().key();
  EXPECT_NE(reason.find("HTTP 400: This model's maximum context length is 256"), std::string::npos)
      << reason;
  EXPECT_EQ(j["failures_by_reason"].begin().value(), 5);
  EXPECT_NE(refused.out.find("failed 5: HTTP 400: This model's maximum context length"),
            std::string::npos)
      << refused.out;
}

TEST(BenchServe, ChatPromptsFromAFileAndAnUnreachableServerFailClearly) {
  ServerProcess s("--model " + stories_gguf() + " --threads 1 --chat-template " +
                  chatml_template());
  const std::string data = write_temp("bench_serve.jsonl",
                                      "{\"prompt\": \"Tell me a story\", \"output_len\": 12}\n"
                                      "{\"prompt\": \"A cat\", \"max_tokens\": 7}\n");
  const std::string result = test::temp_path("bench_serve_chat.json");
  const CliResult r =
      run_cli("bench serve --base-url http://127.0.0.1:" + std::to_string(s.port()) +
              " --endpoint /v1/chat/completions --dataset-path " + data +
              " --num-prompts 6 --request-rate inf --ignore-eos --save-result " + result);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const ojson j = read_json(result);
  EXPECT_EQ(j["completed"], 6);
  EXPECT_EQ(j["total_output_tokens"], 3 * 12 + 3 * 7);

  const CliResult down = run_cli("bench serve --base-url http://127.0.0.1:1 --num-prompts 2");
  EXPECT_NE(down.code, 0);
  EXPECT_NE(down.err.find("cannot list models"), std::string::npos) << down.err;
  const CliResult bad =
      run_cli("bench serve --base-url http://127.0.0.1:" + std::to_string(s.port()) +
              " --goodput latency:5");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("--goodput"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace pagedllm::test
