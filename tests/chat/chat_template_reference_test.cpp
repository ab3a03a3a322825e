// Conversations beyond the shared vectors, rendered by every shared template and compared with
// Python's Jinja2 run at test time (tests/chat/render_reference.py): tools, assistant tool calls
// and tool results, multi-turn with and without a system prompt, odd content.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "test_paths.h"
#include "tokenizer/corpus.h"

namespace pagedllm {
namespace {

using json = nlohmann::ordered_json;

json cases() {
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"},
       "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Adds two numbers",
     "parameters": {"type": "object", "properties": {"a": {"type": "number"},
       "b": {"type": "number"}}, "required": ["a", "b"]}}}])");
  const json tool_turns = json::parse(R"([
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18 C, sunny"},
    {"role": "assistant", "content": "It is 18 C and sunny in Paris."},
    {"role": "user", "content": "And 2 + 3?"}])");
  const json plain = json::parse(R"([
    {"role": "system", "content": "You are terse.\nAnswer in one line."},
    {"role": "user", "content": "  spaces  and \"quotes\" and {{ braces }} {% tags %}  "},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Ünïcödé 日本語 🦙\ttab"},
    {"role": "assistant", "content": "OK"},
    {"role": "user", "content": "last"}])");
  json out = json::array();
  for (bool gen : {false, true}) {
    out.push_back({{"messages", tool_turns}, {"tools", tools}, {"add_generation_prompt", gen}});
    out.push_back({{"messages", json::array({tool_turns[0]})},
                   {"tools", tools},
                   {"add_generation_prompt", gen}});
    out.push_back({{"messages", plain}, {"tools", nullptr}, {"add_generation_prompt", gen}});
  }
  return out;
}

TEST(ChatTemplateReference, ToolsAndToolCallsRenderAsPythonJinja2ForEveryTemplate) {
  const std::string dir = test::shared_dir() + "/vectors/chat-templates";
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".jinja") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  const json all_cases = cases();
  const std::string cases_path = test::temp_path("chat-cases.json");
  std::ofstream(cases_path) << all_cases.dump();
  std::string command = "/usr/bin/python3 " + std::string(PAGEDLLM_SOURCE_DIR) +
                        "/tests/chat/render_reference.py " + cases_path;
  for (const auto& p : paths) command += " '" + p + "'";
  const json reference = json::parse(test::run_command(command));
  size_t compared = 0, raised = 0;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream source;
    source << in.rdbuf();
    const ChatTemplate tmpl(source.str());
    for (size_t i = 0; i < all_cases.size(); ++i) {
      ChatTemplateInputs inputs;
      inputs.messages = all_cases[i]["messages"];
      inputs.tools = all_cases[i]["tools"];
      inputs.add_generation_prompt = all_cases[i]["add_generation_prompt"];
      inputs.bos_token = "<s>";
      inputs.eos_token = "</s>";
      inputs.date = "2026-01-02";
      const json& want = reference[path][i];
      const std::string where =
          std::filesystem::path(path).filename().string() + " case " + std::to_string(i);
      if (want.contains("error")) {
        ++raised;
        EXPECT_THROW(tmpl.render(inputs), TemplateError)
            << where << " (Jinja2: " << want["error"] << ")";
        continue;
      }
      try {
        EXPECT_EQ(tmpl.render(inputs), want["text"].get<std::string>()) << where;
      } catch (const TemplateError& e) {
        ADD_FAILURE() << where << ": " << e.what();
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 250u);
  RecordProperty("raised", static_cast<int>(raised));
}

}  // namespace
}  // namespace pagedllm
