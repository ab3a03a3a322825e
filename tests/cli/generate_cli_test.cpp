#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using json = nlohmann::json;
using test::run_cli;

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

json expected(const std::string& dir) {
  std::ifstream in(test::model_path(dir + "/expected.json"));
  return json::parse(in);
}

TEST(GenerateCli, JsonGreedyIdsMatchTheReferenceForEveryFormat) {
  const json e = expected("stories260K");
  const std::string gguf = test::model_path("stories260K/stories260K.gguf");
  const std::string bin = test::model_path("stories260K/stories260K.bin") + " --tokenizer " +
                          test::model_path("stories260K/tok512.bin");
  for (const std::string& model : {gguf, bin}) {
    const auto r = run_cli("generate --model " + model +
                           " --prompt-ids 1 --temperature 0 --max-tokens 200 --ignore-eos --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["prompt_token_ids"], json::array({1}));
    EXPECT_EQ(lines[0]["token_ids"], e["greedy_ids"]);
    EXPECT_EQ(lines[0]["finish_reason"], "length");
    EXPECT_EQ(lines[0]["text"].get<std::string>().substr(0, 16), "Once upon a time");
    EXPECT_NE(r.err.find("kv_blocks="), std::string::npos) << "the log says what was chosen";
  }
}

// Runtime ISA dispatch: every path this CPU can run gives the same greedy tokens.
TEST(GenerateCli, EveryForcedIsaPathGivesTheReferenceTokens) {
  const json e = expected("stories260K");
  for (const char* isa : {"generic", "avx2", "avx512"}) {
    const auto r =
        run_cli("generate --model " + test::model_path("stories260K/stories260K.gguf") +
                    " --prompt-ids 1 --temperature 0 --max-tokens 60 --ignore-eos --json",
                std::string("PAGEDLLM_ISA=") + isa);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto ids = json_lines(r.out)[0]["token_ids"];
    for (int i = 0; i < 60; ++i) ASSERT_EQ(ids[i], e["greedy_ids"][i]) << isa << " token " << i;
  }
}

TEST(GenerateCli, PromptsFileRunsInInputOrderWithLogprobs) {
  const std::string file =
      test::write_temp("prompts.jsonl",
                       "{\"prompt\": \"Once upon a time\"}\n{\"prompt_token_ids\": [1, 403]}\n"
                       "\n{\"prompt\": \"The cat\"}\n");
  const auto r =
      run_cli("generate --model " + test::model_path("stories260K/stories260K.gguf") +
              " --prompts-file " + file + " --temperature 0 --max-tokens 5 --logprobs 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["prompt_token_ids"], json::array({1, 403}));
  EXPECT_EQ(lines[1]["token_ids"][0], 407);  // the reference's second greedy token
  for (const auto& l : lines) {
    ASSERT_EQ(l["logprobs"].size(), l["token_ids"].size());
    const auto& first = l["logprobs"][0];
    EXPECT_EQ(first["token_id"], l["token_ids"][0]);
    EXPECT_EQ(first["top_logprobs"].size(), 2u);
    EXPECT_LE(first["logprob"].get<double>(), 0.0);
  }
}

TEST(GenerateCli, StopTokenEndsTheRequestAndIsIncludedInTokenIds) {
  // The reference's fifth greedy token is 432; stopping on it ends the request there.
  const auto r =
      run_cli("generate --model " + test::model_path("stories260K/stories260K.gguf") +
              " --prompt-ids 1 --temperature 0 --max-tokens 100 --stop-token-ids 432 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto out = json_lines(r.out)[0];
  EXPECT_EQ(out["finish_reason"], "stop");
  EXPECT_EQ(out["token_ids"], json::array({403, 407, 261, 378, 432}));
}

TEST(GenerateCli, Bf16KvCacheKeepsTheGreedyStoryOnTrack) {
  const json e = expected("stories260K");
  const auto r =
      run_cli("generate --model " + test::model_path("stories260K/stories260K.gguf") +
              " --kv-cache-dtype bf16 --prompt-ids 1 --temperature 0 --max-tokens 20 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("MiB bf16"), std::string::npos) << r.err;
  // The log says why the pool has its size: the need at full length and the budget.
  EXPECT_NE(r.err.find("max_num_seqs x max_model_len need "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" MiB, budget "), std::string::npos) << r.err;
  const auto ids = json_lines(r.out)[0]["token_ids"];
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ids[i], e["greedy_ids"][i]) << i;
  EXPECT_NE(run_cli("generate --model x --kv-cache-dtype f8").code, 0);
}

TEST(GenerateCli, SameSeedSameTextAcrossRuns) {
  const std::string cmd = "generate --model " + test::model_path("stories260K/stories260K.gguf") +
                          " --prompt \"Once upon a time\" --temperature 0.9 --top-p 0.9 --seed 7 "
                          "--max-tokens 40 --json";
  const auto a = run_cli(cmd), b = run_cli(cmd);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(json_lines(a.out)[0]["token_ids"], json_lines(b.out)[0]["token_ids"]);
}

TEST(GenerateCli, BadInputExitsNonZeroWithOneLine) {
  auto r = run_cli("generate --model /nonexistent.gguf --prompt hi");
  EXPECT_NE(r.code, 0);
  r = run_cli("generate --model " + test::model_path("stories260K/stories260K.gguf") +
              " --prompt-ids 1,99999 --max-tokens 3");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("outside the vocabulary"), std::string::npos) << r.err;
  r = run_cli("generate --model " + test::model_path("stories260K/stories260K.bin") +
              " --prompt hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--tokenizer"), std::string::npos) << r.err;
  r = run_cli("generate --model " + test::model_path("stories260K/stories260K.gguf") +
              " --max-model-len 64 --prompt-ids 1 --max-tokens 100");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("exceeds max_model_len (64)"), std::string::npos) << r.err;
  const std::string last_line = r.err.substr(r.err.rfind("pagedllm: error"));
  EXPECT_EQ(std::count(last_line.begin(), last_line.end(), '\n'), 1);
}

// A max_model_len past the model's context is refused, as vLLM refuses it, unless
// PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN) says to go on.
TEST(GenerateCli, MaxModelLenPastTheContextNeedsTheAllowLongOverride) {
  // A 2040-token prompt (prefill is cheap, also under the sanitizers) and 20 tokens past it.
  std::string ids = "1";
  for (int i = 1; i < 2040; ++i) ids += "," + std::to_string(300 + i % 100);
  const std::string args = "generate --model " + test::model_path("stories260K/stories260K.gguf") +
                           " --max-model-len 2100 --prompt-ids " + ids +
                           " --temperature 0 --max-tokens 20 --ignore-eos --json";
  auto r = run_cli(args);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("max_model_len 2100 exceeds the model's context length 2048 "
                       "(PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN=1 allows it)"),
            std::string::npos)
      << r.err;
  r = run_cli(args, "PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN=1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("allowed by PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN"), std::string::npos);
  EXPECT_EQ(json_lines(r.out)[0]["token_ids"].size(), 20u);  // 2040 + 20: past the 2048 context
}

// Flags that do not parse exit 2, as command-line tools do (CLI11's own codes are 100 and up),
// with a line that names the flag; --help still exits 0.
TEST(GenerateCli, ABadFlagOrValueExitsTwo) {
  const std::string model = " --model " + test::model_path("stories260K/stories260K.gguf");
  for (const std::string& args :
       {"generate" + model + " --max-tokens ten", "generate" + model + " --max-model-len -5",
        "generate" + model + " --no-such-flag", std::string("no-such-command")}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
  }
  EXPECT_NE(run_cli("bench --help").out.find("serve"), std::string::npos);
}

TEST(GenerateCli, HelpExplainsEveryFlag) {
  const auto r = run_cli("generate --help");
  ASSERT_EQ(r.code, 0);
  for (const char* flag :
       {"--model",        "--tokenizer",     "--prompt",          "--prompt-ids",
        "--prompts-file", "--max-tokens",    "--temperature",     "--top-p",
        "--top-k",        "--seed",          "--ignore-eos",      "--logprobs",
        "--json",         "--max-model-len", "--block-size",      "--max-num-batched-tokens",
        "--max-num-seqs", "--num-blocks",    "--kv-cache-memory", "--no-prefix-caching",
        "--threads"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

// --speculative-config on the command line: the same tokens, the choice in the log, and a
// one-line reason for a configuration that cannot work.
TEST(GenerateCli, SpeculativeConfigKeepsTheReferenceTokensAndRefusesBadJson) {
  const json e = expected("stories260K");
  const std::string model = test::model_path("stories260K/stories260K.gguf");
  const auto r = run_cli("generate --model " + model +
                         " --prompt-ids 1 --temperature 0 --max-tokens 200 --ignore-eos --json "
                         "--speculative-config '{\"method\": \"ngram\", "
                         "\"num_speculative_tokens\": 4}'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_lines(r.out)[0]["token_ids"], e["greedy_ids"]);
  EXPECT_NE(r.err.find("speculative=ngram k=4 n=2..4 adaptive"), std::string::npos) << r.err;

  const auto bad = run_cli("generate --model " + model +
                           " --prompt-ids 1 --speculative-config '{\"method\": \"ngram\"}'");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("num_speculative_tokens"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// llama.cpp's flags: --json-schema(-file), --grammar(-file), --regex. The output follows the
// constraint; a constraint that does not compile, or two at once, is one line and exit 1.
TEST(GenerateCli, StructuredOutputFlagsConstrainTheTextAndBadOnesAreOneLine) {
  const std::string model = " --model " + test::model_path("stories260K/stories260K.gguf");
  const std::string grammar = test::temp_path("answer.gbnf");
  std::ofstream(grammar) << "root ::= (\"yes\" | \"no\") \"!\"\n";
  auto r = run_cli("generate" + model + " --prompt 'Once upon a time' --temperature 0.8 --seed 4" +
                   " --json --grammar-file " + grammar);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string text = json::parse(r.out)["text"];
  EXPECT_TRUE(text == "yes!" || text == "no!") << text;
  r = run_cli("generate" + model +
              " --prompt 'Once upon a time' --temperature 0 --json --json-schema "
              "'{\"type\": \"array\", \"items\": {\"type\": \"integer\", \"minimum\": 0, "
              "\"maximum\": 9}, \"maxItems\": 3}'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json value = json::parse(json::parse(r.out)["text"].get<std::string>());
  ASSERT_TRUE(value.is_array());
  EXPECT_LE(value.size(), 3u);
  for (const json& v : value) EXPECT_TRUE(v.is_number_integer() && v >= 0 && v <= 9) << value;
  for (const char* bad : {" --regex '(unclosed'", " --regex a --grammar 'root ::= \"a\"'",
                          " --json-schema '{\"type\": \"objekt\"}'"}) {
    r = run_cli("generate" + model + bad);
    EXPECT_EQ(r.code, 1) << bad;
    // The engine's own log line comes first (the constraint needs its vocabulary), then the
    // reason, on one line.
    const size_t at = r.err.find("pagedllm: error: ");
    ASSERT_NE(at, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n', at), r.err.size() - 1) << r.err;
  }
}

}  // namespace
}  // namespace pagedllm
