// tokenizer.json pipeline stages on small hand-made vocabularies (fuzz/seeds/), where every id
// can be worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/mapped_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/incremental_detokenizer.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

std::string seed(const std::string& name) {
  std::ifstream in(std::string(PAGEDLLM_SOURCE_DIR) + "/fuzz/seeds/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(HfTokenizerJson, SentencePieceStyleBpePrependsMarkerAndFallsBackToBytes) {
  const auto tok = tokenizer_from_json(seed("tokenizer_metaspace.json"), "", "metaspace");
  // "hi" -> "▁hi" (Prepend + merges "▁ h", "▁h i"); BOS from TemplateProcessing.
  EXPECT_EQ(tok->encode("hi", true), (Ids{1, 9}));
  EXPECT_EQ(tok->encode("hi", false), (Ids{9}));
  // "日" is not in the vocabulary: its three UTF-8 bytes become <0xE6><0x97><0xA5>.
  EXPECT_EQ(tok->encode("日", false), (Ids{5, 2, 3, 4}));
  // "x" has no byte tokens either: unknown, and consecutive unknowns fuse into one <unk>.
  EXPECT_EQ(tok->encode("xx", false), (Ids{5, 0}));
  // Decoding: "▁" -> " ", bytes joined, the leading space stripped once at the start of text.
  EXPECT_EQ(tok->decode({9, 9}), "hi hi");
  EXPECT_EQ(tok->decode({5, 2, 3, 4}), "日");
  EXPECT_EQ(tok->decode({1, 9}, /*skip_special=*/false), "<s> hi");
  EXPECT_EQ(tok->decode({1, 9}, /*skip_special=*/true), "hi");
  EXPECT_EQ(tok->bos_id(), std::nullopt);  // no tokenizer_config.json given
}

TEST(HfTokenizerJson, ByteLevelPipelineAppliesNormalizerSplitDigitsAndIgnoreMerges) {
  const auto tok = tokenizer_from_json(seed("tokenizer_bytelevel.json"), "", "bytelevel");
  EXPECT_EQ(tok->encode("abc", false), (Ids{6}));        // ignore_merges: "abc" is a token
  EXPECT_EQ(tok->encode("ab ab", false), (Ids{4, 11}));  // "Ġab" by merges "Ġ a", "Ġa b"
  EXPECT_EQ(tok->encode("12", false), (Ids{7, 8}));      // Digits(individual) splits "12"
  EXPECT_EQ(tok->encode("a's", false), (Ids{0, 9, 10}));
  EXPECT_EQ(tok->encode("ab", true), (Ids{12, 4}));  // TemplateProcessing adds <|bos|>
  EXPECT_EQ(tok->decode({4, 11}), "ab ab");
}

TEST(HfTokenizerJson, AddedTokensMatchBeforeTheModelWithStripAndSingleWord) {
  const auto tok = tokenizer_from_json(seed("tokenizer_bytelevel.json"), "", "bytelevel");
  // Special text is matched when parsed, and spelled out in bytes when not.
  EXPECT_EQ(tok->encode("ab<|bos|>", false, true), (Ids{4, 12}));
  EXPECT_NE(tok->encode("ab<|bos|>", false, false), (Ids{4, 12}));
  // <x> strips the spaces around it (lstrip/rstrip) and matches only as a whole word.
  EXPECT_EQ(tok->encode("ab  <x>  ab", false), (Ids{4, 13, 4}));
  const Ids glued = tok->encode("ab<x>", false);
  EXPECT_EQ(std::count(glued.begin(), glued.end(), 13), 0);
  EXPECT_TRUE(tok->is_special(12));
  EXPECT_FALSE(tok->is_special(13));
  EXPECT_EQ(tok->decode({4, 12, 13}, /*skip_special=*/true), "ab<x>");
}

TEST(HfTokenizerJson, ConfigSetsBosEosAddBosAndChatTemplate) {
  const std::string config =
      R"({"bos_token": {"content": "<s>"}, "eos_token": "<unk>", "add_bos_token": false,
          "chat_template": [{"name": "default", "template": "{{ bos_token }}"}]})";
  const auto tok = tokenizer_from_json(seed("tokenizer_metaspace.json"), config, "metaspace");
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 0);
  EXPECT_EQ(tok->encode("hi", true), (Ids{9}));  // add_bos_token=false overrides the template
  EXPECT_EQ(tok->chat_template(), "{{ bos_token }}");
}

// As transformers and vLLM: chat_template.jinja, else chat_template.json (a processor's file, as
// the Qwen2-VL repos ship it), else tokenizer_config.json's field.
TEST(HfTokenizerJson, AProcessorsChatTemplateFileWinsOverTokenizerConfig) {
  const std::string dir = std::string(testing::TempDir()) + "/chat-template-files";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << seed("tokenizer_metaspace.json");
  std::ofstream(dir + "/tokenizer_config.json") << R"({"chat_template": "config"})";
  EXPECT_EQ(load_hf_tokenizer(dir)->chat_template(), "config");
  std::ofstream(dir + "/chat_template.json") << R"({"chat_template": "processor json"})";
  EXPECT_EQ(load_hf_tokenizer(dir)->chat_template(), "processor json");
  std::ofstream(dir + "/chat_template.jinja") << "jinja file";
  EXPECT_EQ(load_hf_tokenizer(dir)->chat_template(), "jinja file");
  std::filesystem::remove(dir + "/chat_template.jinja");
  std::filesystem::remove(dir + "/tokenizer_config.json");
  EXPECT_EQ(load_hf_tokenizer(dir)->chat_template(), "processor json");
  std::ofstream(dir + "/chat_template.json") << R"({"chat_template": 3})";
  EXPECT_THROW(load_hf_tokenizer(dir), ModelLoadError);
}

TEST(HfTokenizerJson, MalformedFilesGiveOneClearError) {
  for (const char* bad : {"", "{", "[]", R"({"model": {"type": "Unigram", "vocab": []}})",
                          R"({"model": {"vocab": {"a": -1}, "merges": []}})",
                          R"({"model": {"vocab": {}, "merges": []}, "pre_tokenizer":
                             {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}})"}) {
    try {
      tokenizer_from_json(bad, "", "bad.json");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const ModelLoadError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("bad.json: ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace pagedllm
