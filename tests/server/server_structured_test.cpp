// Structured outputs and forced tool calls through a live server on the shared stories model:
// response_format, vLLM's structured_outputs and guided_* fields, tool_choice "required" and a
// named function, streamed and not, each output checked by an independent reference (Ajv,
// std::regex); and every bad constraint answered 400 while the server keeps serving.
#include <regex>
#include <set>

#include "json_schema_reference.h"
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

const char* kPersonSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 10}, "age": {"type": "integer", "minimum": 1,
    "maximum": 99}}, "required": ["name", "age"], "additionalProperties": false})";

const ojson kWeatherTool = {{"type", "function"},
                            {"function",
                             {{"name", "get_weather"},
                              {"description", "The weather in a city"},
                              {"parameters",
                               {{"type", "object"},
                                {"properties",
                                 {{"city", {{"type", "string"}, {"maxLength", 12}}},
                                  {"unit", {{"enum", {"celsius", "fahrenheit"}}}}}},
                                {"required", {"city", "unit"}},
                                {"additionalProperties", false}}}}}};
const ojson kTimeTool = {{"type", "function"},
                         {"function",
                          {{"name", "get_time"},
                           {"parameters",
                            {{"type", "object"},
                             {"properties", {{"zone", {{"enum", {"UTC", "CET"}}}}}},
                             {"required", {"zone"}},
                             {"additionalProperties", false}}}}}};

class ServerStructured : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess("--model " + stories_gguf() + " --chat-template " +
                                chatml_template() + " --threads 1");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static ojson chat(ojson extra, uint64_t seed = 1) {
    ojson body = {{"messages", {{{"role", "user"}, {"content", "Tell me about Lily."}}}},
                  {"temperature", 1.0},
                  {"seed", seed},
                  {"max_tokens", 200}};
    body.update(extra);
    return body;
  }

  static ServerProcess* server_;
};
ServerProcess* ServerStructured::server_ = nullptr;

TEST_F(ServerStructured, ResponseFormatJsonSchemaGivesContentThatValidates) {
  std::vector<std::string> texts;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const HttpReply r = post(
        *server_, "/v1/chat/completions",
        chat(
            {{"response_format",
              {{"type", "json_schema"},
               {"json_schema",
                {{"name", "person"}, {"schema", ojson::parse(kPersonSchema)}, {"strict", true}}}}}},
            seed));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json["choices"][0]["finish_reason"], "stop");
    texts.push_back(r.json["choices"][0]["message"]["content"].get<std::string>());
  }
  for (const std::string& v : ajv_verdicts(kPersonSchema, texts)) EXPECT_EQ(v, "valid");
}

TEST_F(ServerStructured, EveryWayOfAskingConstrainsCompletionsAndChat) {
  const std::regex date("20[0-9]{2}-(0[1-9]|1[0-2])-[0-3][0-9]");
  for (const ojson& field :
       {ojson{{"structured_outputs", {{"regex", "20[0-9]{2}-(0[1-9]|1[0-2])-[0-3][0-9]"}}}},
        ojson{{"guided_regex", "20[0-9]{2}-(0[1-9]|1[0-2])-[0-3][0-9]"}}}) {
    ojson completion = {
        {"prompt", "Once upon a time"}, {"temperature", 1.0}, {"seed", 3}, {"max_tokens", 40}};
    completion.update(field);
    const HttpReply a = post(*server_, "/v1/completions", completion);
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_TRUE(std::regex_match(a.json["choices"][0]["text"].get<std::string>(), date)) << a.body;
    const HttpReply b = post(*server_, "/v1/chat/completions", chat(field));
    ASSERT_EQ(b.status, 200) << b.body;
    EXPECT_TRUE(
        std::regex_match(b.json["choices"][0]["message"]["content"].get<std::string>(), date))
        << b.body;
  }
  for (const ojson& field : {ojson{{"structured_outputs", {{"choice", {"happy", "sad"}}}}},
                             ojson{{"guided_choice", {"happy", "sad"}}}}) {
    const HttpReply r = post(*server_, "/v1/chat/completions", chat(field, 7));
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string c = r.json["choices"][0]["message"]["content"];
    EXPECT_TRUE(c == "happy" || c == "sad") << c;
  }
  const HttpReply object =
      post(*server_, "/v1/chat/completions",
           chat({{"response_format", {{"type", "json_object"}}}, {"max_tokens", 400}}));
  ASSERT_EQ(object.status, 200) << object.body;
  if (object.json["choices"][0]["finish_reason"] == "stop") {
    const ojson parsed =
        ojson::parse(object.json["choices"][0]["message"]["content"].get<std::string>());
    EXPECT_TRUE(parsed.is_object());
  }
}

TEST_F(ServerStructured, ANamedFunctionIsCalledWithArgumentsThatValidate) {
  const ojson body =
      chat({{"tools", {kWeatherTool, kTimeTool}},
            {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}});
  const HttpReply r = post(*server_, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const ojson& choice = r.json["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop");  // as OpenAI answers a named tool_choice
  EXPECT_TRUE(choice["message"]["content"].is_null());
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  const ojson& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_TRUE(std::regex_match(call["id"].get<std::string>(), std::regex("call_[A-Za-z0-9]{24}")));
  const std::string arguments = call["function"]["arguments"];
  EXPECT_EQ(ajv_verdicts(kWeatherTool["function"]["parameters"].dump(), {arguments})[0], "valid");

  // Streamed: id, type and name first, then argument fragments that add up to the same text.
  ojson streamed = body;
  streamed["stream"] = true;
  const StreamReply s = post_stream(*server_, "/v1/chat/completions", streamed);
  ASSERT_EQ(s.status, 200);
  std::string fragments, name, finish;
  int heads = 0;
  for (const ojson& e : s.events) {
    for (const ojson& c : e["choices"]) {
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      if (!c["delta"].contains("tool_calls")) continue;
      for (const ojson& t : c["delta"]["tool_calls"]) {
        EXPECT_EQ(t["index"], 0);
        if (t.contains("id")) {
          ++heads;
          name = t["function"]["name"];
        }
        fragments += t["function"].value("arguments", "");
      }
      if (c["delta"].contains("content")) {
        EXPECT_EQ(c["delta"]["content"], "");  // only the role chunk's
      }
    }
  }
  EXPECT_EQ(heads, 1);
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(fragments, arguments);  // same seed, same tokens
  EXPECT_EQ(finish, "stop");
}

// One call per answer without parallel_tool_calls. (With it, this small story model keeps
// listing calls until max_tokens: an answer cut short comes back as content, as llama.cpp's.)
TEST_F(ServerStructured, RequiredToolChoiceGivesACallOfTheGivenTools) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const HttpReply r = post(*server_, "/v1/chat/completions",
                             chat({{"tools", {kWeatherTool, kTimeTool}},
                                   {"tool_choice", "required"},
                                   {"parallel_tool_calls", false}},
                                  seed));
    ASSERT_EQ(r.status, 200) << r.body;
    const ojson& choice = r.json["choices"][0];
    ASSERT_EQ(choice["finish_reason"], "tool_calls") << r.body;
    EXPECT_TRUE(choice["message"]["content"].is_null());
    const ojson& calls = choice["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u);
    const std::string name = calls[0]["function"]["name"];
    const ojson& tool = name == "get_weather" ? kWeatherTool : kTimeTool;
    EXPECT_EQ(tool["function"]["name"], name);
    EXPECT_EQ(ajv_verdicts(tool["function"]["parameters"].dump(),
                           {calls[0]["function"]["arguments"].get<std::string>()})[0],
              "valid");
  }
  const HttpReply cut = post(
      *server_, "/v1/chat/completions",
      chat({{"tools", {kWeatherTool, kTimeTool}}, {"tool_choice", "required"}, {"max_tokens", 8}}));
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(cut.json["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(cut.json["choices"][0]["message"]["content"].is_string());
}

TEST_F(ServerStructured, BadConstraintsAreRefusedWith400AndTheServerGoesOn) {
  struct Case {
    const char* field;
    std::string param, says;
  };
  const std::vector<Case> cases = {
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x",
           "schema": {"type": "object", "properties": {"a": {"type": "strin"}}}}}})",
       "response_format", "strin"},
      {R"({"guided_regex": "(unclosed"})", "guided_regex", "regex"},
      {R"({"structured_outputs": {"grammar": "root ::= [a-"}})", "structured_outputs", "1:"},
      {R"({"structured_outputs": {"regex": "a", "choice": ["a"]}})", "structured_outputs",
       "exactly one"},
      {R"({"guided_choice": ["a"], "response_format": {"type": "json_object"}})", "guided_choice",
       "only one"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}],
           "tool_choice": {"type": "function", "function": {"name": "nope"}}})",
       "tool_choice", "nope"},
      {R"({"tools": [{"type": "function", "function": {"description": "no name"}}]})", "tools",
       "name"},
      {R"({"tool_choice": "required"})", "tool_choice", "needs tools"},
      {R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "auto"})",
       "tool_choice", "--enable-auto-tool-choice"},
      {R"({"response_format": {"type": "yaml"}})", "response_format", "yaml"},
  };
  for (const Case& c : cases) {
    const HttpReply r = post(*server_, "/v1/chat/completions", chat(ojson::parse(c.field)));
    EXPECT_EQ(r.status, 400) << c.field << " -> " << r.body;
    EXPECT_EQ(r.json["error"]["param"], c.param) << r.body;
    EXPECT_NE(r.json["error"]["message"].get<std::string>().find(c.says), std::string::npos)
        << r.body;
  }
  const HttpReply ok = post(*server_, "/v1/chat/completions", chat({{"max_tokens", 5}}));
  EXPECT_EQ(ok.status, 200);
}

}  // namespace
}  // namespace pagedllm::test

namespace pagedllm::test {
namespace {

// With --enable-auto-tool-choice the parser reads calls from what the model wrote; here a
// grammar makes the story model write Hermes-style calls, so the reading is what is tested.
class ServerAutoTools : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ =
        new ServerProcess("--model " + stories_gguf() + " --chat-template " + chatml_template() +
                          " --threads 1 --enable-auto-tool-choice --tool-call-parser "
                          "hermes --reasoning-parser deepseek_r1");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess* server_;
};
ServerProcess* ServerAutoTools::server_ = nullptr;

const char* kHermesCall =
    R"(</think>Let me look\.<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "Paris", )"
    R"("unit": "celsius"\}\}\n</tool_call>)";

ojson auto_tools_body(bool stream) {
  return {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
          {"tools", {kWeatherTool}},
          {"tool_choice", "auto"},
          {"guided_regex", kHermesCall},
          {"chat_template_kwargs", {{"enable_thinking", false}}},
          {"max_tokens", 200},
          {"stream", stream}};
}

TEST_F(ServerAutoTools, CallsTheModelWritesComeBackAsToolCalls) {
  const HttpReply r = post(*server_, "/v1/chat/completions", auto_tools_body(false));
  ASSERT_EQ(r.status, 200) << r.body;
  const ojson& choice = r.json["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
  // deepseek_r1: what comes before </think> is reasoning (nothing here), the rest content.
  EXPECT_FALSE(choice["message"].contains("reasoning")) << r.body;
  EXPECT_EQ(choice["message"]["content"], "Let me look.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  const ojson& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(ojson::parse(call["function"]["arguments"].get<std::string>()),
            ojson({{"city", "Paris"}, {"unit", "celsius"}}));

  const StreamReply s = post_stream(*server_, "/v1/chat/completions", auto_tools_body(true));
  std::string content, arguments, name, finish;
  for (const ojson& e : s.events) {
    for (const ojson& c : e["choices"]) {
      content += c["delta"].value("content", "");
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      for (const ojson& t : c["delta"].value("tool_calls", ojson::array())) {
        if (t.contains("id")) name = t["function"]["name"];
        arguments += t["function"].value("arguments", "");
      }
    }
  }
  EXPECT_EQ(content, "Let me look.");  // no markup leaks into the content
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(arguments, call["function"]["arguments"]);
  EXPECT_EQ(finish, "tool_calls");
}

TEST_F(ServerAutoTools, ReasoningIsSeparatedWholeAndStreamed) {
  ojson body = {{"messages", {{{"role", "user"}, {"content", "Think first."}}}},
                {"guided_regex", "Hmm, a story\\.</think>Once upon a time\\."},
                {"chat_template_kwargs", {{"enable_thinking", false}}},
                {"max_tokens", 100}};
  const HttpReply r = post(*server_, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const ojson& message = r.json["choices"][0]["message"];
  EXPECT_EQ(message["reasoning"], "Hmm, a story.");
  EXPECT_EQ(message["reasoning_content"], "Hmm, a story.");
  EXPECT_EQ(message["content"], "Once upon a time.");
  body["stream"] = true;
  std::string reasoning, content;
  for (const ojson& e : post_stream(*server_, "/v1/chat/completions", body).events) {
    for (const ojson& c : e["choices"]) {
      reasoning += c["delta"].value("reasoning", "");
      content += c["delta"].value("content", "");
    }
  }
  EXPECT_EQ(reasoning, "Hmm, a story.");
  EXPECT_EQ(content, "Once upon a time.");
}

TEST(ServeParserFlags, UnknownParsersAndAutoWithoutAParserStopTheServerWithOneLine) {
  for (const char* flags :
       {"--tool-call-parser nope", "--reasoning-parser nope", "--enable-auto-tool-choice"}) {
    try {
      ServerProcess s("--model " + stories_gguf() + " " + flags);
      ADD_FAILURE() << flags << " started";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("nope") != std::string::npos ||
                  what.find("needs --tool-call-parser") != std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace pagedllm::test
