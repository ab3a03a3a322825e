// The parsers read back the calls each model's own chat template writes for an assistant turn:
// the format the model was trained to produce. The shared templates are rendered with an
// assistant message holding tool calls; the text of that turn goes through the reasoning
// parser where the model thinks, then through the tool-call parser, as the server would.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"
#include "test_paths.h"

namespace pagedllm::server {
namespace {

using Json = nlohmann::ordered_json;

struct TemplateCase {
  std::string file;
  std::string tool_parser;
  std::string reasoning_parser;  // empty: none
  std::string turn_start;        // the assistant turn's text follows it, after the user's
  std::string turn_end;          // and ends before this
  size_t calls;                  // how many calls the template accepts in one turn
};

const Json& tools() {
  static const Json t = Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"},
       "days": {"type": "integer"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Time",
     "parameters": {"type": "object", "properties": {}}}}])");
  return t;
}

const Json& calls() {
  static const Json c = Json::parse(R"([
    {"id": "abcDEF123", "type": "function", "function": {"name": "get_weather",
     "arguments": {"city": "Zürich", "days": 3}}},
    {"id": "xyzXYZ789", "type": "function", "function": {"name": "get_time",
     "arguments": {}}}])");
  return c;
}

std::string assistant_turn(const TemplateCase& c, size_t num_calls) {
  std::ifstream in(test::shared_dir() + "/vectors/chat-templates/" + c.file, std::ios::binary);
  std::stringstream source;
  source << in.rdbuf();
  ChatTemplateInputs inputs;
  Json assistant = {{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array()}};
  for (size_t i = 0; i < num_calls; ++i) assistant["tool_calls"].push_back(calls()[i]);
  inputs.messages = Json::array({{{"role", "user"}, {"content", "Weather and time?"}}, assistant});
  inputs.tools = tools();
  inputs.bos_token = "<s>";
  inputs.eos_token = "</s>";
  inputs.date = "2026-01-02";
  const std::string text = ChatTemplate(source.str()).render(inputs);
  const size_t start = text.find(c.turn_start, text.find("Weather and time?"));
  EXPECT_NE(start, std::string::npos) << c.file;
  if (start == std::string::npos) return "";
  const std::string turn = text.substr(start + c.turn_start.size());
  return turn.substr(0, turn.find(c.turn_end));
}

TEST(ToolCallParserTemplates, ReadBackTheCallsEachModelsTemplateWrites) {
  const std::vector<TemplateCase> cases = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", "hermes", "", "<|im_start|>assistant\n", "<|im_end|>", 2},
      {"Qwen-Qwen3-0.6B.jinja", "hermes", "qwen3", "<|im_start|>assistant\n", "<|im_end|>", 2},
      {"Qwen-QwQ-32B.jinja", "hermes", "", "<|im_start|>assistant\n", "<|im_end|>", 2},
      {"Qwen3-Coder.jinja", "qwen3_xml", "", "<|im_start|>assistant\n", "<|im_end|>", 2},
      {"Qwen3.5-4B.jinja", "qwen3_xml", "qwen3", "<|im_start|>assistant\n", "<|im_end|>", 2},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral", "", "[/INST]", "</s>", 2},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistral", "", "[/INST]", "</s>", 2},
      {"unsloth-mistral-Devstral-Small-2507.jinja", "mistral", "", "[/INST]", "</s>", 2},
      {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", "mistral", "", "[/INST]", "</s>", 2},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3_json", "",
       "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", 1},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3_json", "",
       "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", 1},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", "llama3_json", "",
       "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", 1},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek_v3", "", "<｜Assistant｜>",
       "<｜end▁of▁sentence｜>", 2},
      {"deepseek-ai-DeepSeek-V3.1.jinja", "deepseek_v31", "deepseek_r1", "<｜Assistant｜>",
       "<｜end▁of▁sentence｜>", 2},
  };
  for (const TemplateCase& c : cases) {
    const std::string turn = assistant_turn(c, c.calls);
    std::string text = turn;
    if (!c.reasoning_parser.empty()) {
      const ReasoningDelta split = make_reasoning_parser(c.reasoning_parser)->parse(turn);
      EXPECT_EQ(split.reasoning.find_first_not_of("\n"), std::string::npos) << c.file;
      text = split.content;
    }
    const ToolParseResult result =
        make_tool_call_parser(c.tool_parser, tools(), [] { return "id"; })->parse(text);
    EXPECT_EQ(result.content, "") << c.file << ": " << turn;
    ASSERT_EQ(result.tool_calls.size(), c.calls) << c.file << ": " << turn;
    for (size_t i = 0; i < c.calls; ++i) {
      const Json& want = calls()[i]["function"];
      EXPECT_EQ(result.tool_calls[i].name, want["name"]) << c.file;
      EXPECT_EQ(Json::parse(result.tool_calls[i].arguments), want["arguments"]) << c.file;
    }
  }
}

}  // namespace
}  // namespace pagedllm::server
