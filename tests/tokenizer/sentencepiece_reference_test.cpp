// pagedllm's SentencePiece-style BPE reading the llama2.c tokenizer.bin of the Llama 2
// vocabulary, against Google's SentencePiece (python3-sentencepiece) reading the same
// vocabulary's tokenizer.model, over the shared tokenizer corpus.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "test_paths.h"
#include "tokenizer/corpus.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/sentencepiece_bpe.h"

namespace pagedllm {
namespace {

TEST(SentencePieceReference, Llama2TokenizerBinMatchesSentencePieceOnTheCorpus) {
  const std::string dir = test::model_path("llama2-tokenizer");
  const SentencePieceBpeTokenizer tok(read_llama2c_tokenizer(dir + "/tokenizer.bin", 32000));
  const std::vector<std::string> corpus = test::tokenizer_corpus(1600, 600);
  ASSERT_GE(corpus.size(), 2000u);
  const std::string input = test::temp_path("corpus-spm.jsonl");
  test::write_jsonl(input, corpus);
  std::istringstream reference(test::run_command(
      "/usr/bin/python3 " + std::string(PAGEDLLM_SOURCE_DIR) +
      "/tests/tokenizer/sentencepiece_reference.py " + dir + "/tokenizer.model " + input));
  size_t compared = 0, mismatches = 0, stream_mismatches = 0;
  for (std::string line; std::getline(reference, line) && compared < corpus.size(); ++compared) {
    const std::vector<int32_t> want = nlohmann::json::parse(line)["ids"];
    const std::vector<int32_t> ids = tok.encode(corpus[compared], false, false);
    if (ids != want && ++mismatches <= 5) {
      ADD_FAILURE() << "ids differ for " << nlohmann::json(corpus[compared]).dump() << "\n  ours "
                    << nlohmann::json(ids).dump() << "\n  ref  " << nlohmann::json(want).dump();
    }
    IncrementalDetokenizer detok(tok, -1);
    std::string streamed;
    for (int32_t id : ids) streamed += detok.push(id);
    streamed += detok.flush();
    if (streamed != tok.decode(ids)) ++stream_mismatches;
  }
  EXPECT_EQ(compared, corpus.size());
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(stream_mismatches, 0u);
}

}  // namespace
}  // namespace pagedllm
