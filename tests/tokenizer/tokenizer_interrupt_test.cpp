// Tokenizing, detokenizing and rendering a chat template stop inside their loops when the
// thread's InterruptScope says so (what the server uses when a client leaves or a deadline
// passes), and run to the end without one.
#include <gtest/gtest.h>

#include <string>

#include "chat/chat_template.h"
#include "format/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/load_tokenizer.h"
#include "util/interrupt.h"

namespace pagedllm {
namespace {

struct Stop {};

// A check that lets `allowed` runs pass and throws on the next one, counting runs.
struct StopAfter {
  int allowed;
  int runs = 0;
  InterruptScope::Check check() {
    return [this] {
      if (++runs > allowed) throw Stop{};
    };
  }
};

std::string long_text() {
  std::string text;
  while (text.size() < (1u << 20))
    text += "Once upon a time, a little girl named Lily saw 3 cats. ";
  return text;
}

void expect_encoding_stops(const Tokenizer& tok) {
  const std::string text = long_text();
  const std::vector<int32_t> ids = tok.encode(text, false);  // no scope: runs to the end
  ASSERT_GT(ids.size(), 100000u);
  StopAfter stop{3};
  InterruptScope scope(stop.check(), std::chrono::microseconds(0));
  EXPECT_THROW(tok.encode(text, false), Stop);
  EXPECT_EQ(stop.runs, 4);  // checked inside the loops, stopped at the first refusal
  stop.runs = 0;
  EXPECT_THROW(tok.decode(ids), Stop);
  EXPECT_EQ(stop.runs, 4);
}

TEST(TokenizerInterrupt, SentencePieceEncodingAndDecodingStopWhenTheScopeSays) {
  expect_encoding_stops(*load_tokenizer(test::model_path("stories260K/stories260K.gguf"), "", 512));
}

TEST(TokenizerInterrupt, ByteLevelBpeEncodingAndDecodingStopWhenTheScopeSays) {
  const std::string path = test::shared_dir() + "/vectors/tokenizer/ggml-vocab-gpt-2.gguf";
  expect_encoding_stops(*tokenizer_from_gguf(GGUFFile(path)));
}

TEST(TokenizerInterrupt, ChatTemplateRenderingStopsWhenTheScopeSays) {
  // Well inside the step limit, yet each step copies a 1 MiB string: minutes without a scope.
  ChatTemplate tmpl(
      "{% for i in range(100000) %}{% if messages[0].content.upper() == 'x' %}x{% endif %}"
      "{% endfor %}");
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", long_text()}}});
  StopAfter stop{2};
  InterruptScope scope(stop.check(), std::chrono::microseconds(0));
  EXPECT_THROW(tmpl.render(in), Stop);
  EXPECT_EQ(stop.runs, 3);
}

}  // namespace
}  // namespace pagedllm
