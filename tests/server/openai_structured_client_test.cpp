// The official `openai` npm client's structured-output and tool-call helpers (with zod, both
// installed by `make test-deps`) against a live server on the shared stories model: parse() with
// zodResponseFormat, named and "required" tool_choice plain, streamed, parsed and through
// runTools, and the BadRequestError a bad request raises. tests/node/openai_structured.mjs runs
// the client and prints a summary; here each value is checked, outputs against the schemas
// with Ajv (an implementation independent of both zod and the server).
#include <regex>

#include "json_schema_reference.h"
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

// Ajv's draft 2020-12 build does not load the draft-07 meta-schema that zod names in $schema;
// the keywords zod emits mean the same in both drafts.
std::string without_meta_schema(ojson schema) {
  schema.erase("$schema");
  return schema.dump();
}

std::string run_script(const ServerProcess& s) {
  const std::string script = std::string(PAGEDLLM_SOURCE_DIR) + "/tests/node/openai_structured.mjs";
  const std::string cmd =
      "node " + script + " http://127.0.0.1:" + std::to_string(s.port()) + "/v1 stories";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return "popen failed";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  return status == 0 ? out : "exit " + std::to_string(status) + ": " + out;
}

TEST(OpenAIStructuredClient, ParseToolCallsAndErrorsWorkThroughTheOfficialClient) {
  ServerProcess s("--model " + stories_gguf() + " --chat-template " + chatml_template() +
                  " --threads 1 --served-model-name stories");
  const std::string out = run_script(s);
  const ojson r = ojson::parse(out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << out << "\n" << s.stderr_text();

  // parse() with zodResponseFormat: a strict JSON schema, and for every seed an object that zod
  // accepts, that is the content parsed, and that Ajv validates against the schema sent.
  const ojson& pet_schema = r["pet_schema"];
  EXPECT_EQ(r["pet_strict"], true);
  EXPECT_EQ(pet_schema["additionalProperties"], false);
  EXPECT_EQ(pet_schema["required"].size(), pet_schema["properties"].size());
  ASSERT_EQ(r["parsed"].size(), 3u);
  std::vector<std::string> contents;
  for (const ojson& p : r["parsed"]) {
    EXPECT_EQ(p["finish_reason"], "stop") << p.dump();
    EXPECT_EQ(p["zod_accepts"], true) << p.dump();
    ASSERT_TRUE(p["parsed"].is_object()) << p.dump();
    EXPECT_EQ(ojson::parse(p["content"].get<std::string>()), p["parsed"]);
    EXPECT_EQ(p["parsed"]["home"].size(), 1u);
    const int age = p["parsed"]["age"];
    EXPECT_TRUE(age >= 1 && age <= 9) << age;
    contents.push_back(p["content"]);
  }
  for (const std::string& v : ajv_verdicts(without_meta_schema(pet_schema), contents))
    EXPECT_EQ(v, "valid");
  // What the client sent is an ordinary response_format: the same request by hand, same seed,
  // gives the same text.
  const HttpReply direct =
      post(s, "/v1/chat/completions",
           ojson{{"messages", {{{"role", "user"}, {"content", "Tell me about Lily."}}}},
                 {"temperature", 1.0},
                 {"seed", 1},
                 {"max_tokens", 300},
                 {"response_format",
                  {{"type", "json_schema"},
                   {"json_schema", {{"name", "pet"}, {"schema", pet_schema}, {"strict", true}}}}}});
  ASSERT_EQ(direct.status, 200) << direct.body;
  EXPECT_EQ(direct.json["choices"][0]["message"]["content"], r["parsed"][0]["content"]);

  // A named tool_choice: one call of that function, arguments that validate, finish "stop".
  const ojson& named = r["named"];
  EXPECT_EQ(named["finish_reason"], "stop");
  EXPECT_TRUE(named["content"].is_null());
  ASSERT_EQ(named["calls"].size(), 1u);
  EXPECT_EQ(named["calls"][0]["name"], "get_weather");
  EXPECT_TRUE(std::regex_match(named["id"].get<std::string>(), std::regex("call_[A-Za-z0-9]{24}")));
  EXPECT_EQ(named["zod_accepts"], true);
  const std::string arguments = named["calls"][0]["arguments"];
  EXPECT_EQ(ajv_verdicts(without_meta_schema(r["weather_schema"]), {arguments})[0], "valid");

  // Streamed with the same seed: the client's accumulated completion and the raw deltas give
  // the same call; one head (id and name) at index 0, no content.
  EXPECT_EQ(r["streamed"]["calls"], named["calls"]);
  EXPECT_EQ(r["streamed"]["finish_reason"], "stop");
  EXPECT_TRUE(r["streamed"]["content"].is_null());
  const ojson& raw = r["raw_stream"];
  EXPECT_EQ(raw["heads"], 1);
  EXPECT_EQ(raw["name"], "get_weather");
  EXPECT_EQ(raw["arguments"], arguments);
  EXPECT_EQ(raw["content"], "");
  EXPECT_EQ(raw["finish_reason"], "stop");
  EXPECT_GT(raw["indexes"].size(), 1u);  // arguments come in fragments
  for (const ojson& i : raw["indexes"]) EXPECT_EQ(i, 0);

  // parse() with zodFunction tools fills parsed_arguments from the same arguments.
  EXPECT_EQ(r["parsed_call"]["name"], "get_weather");
  EXPECT_EQ(r["parsed_call"]["arguments"], arguments);
  EXPECT_EQ(r["parsed_call"]["parsed_arguments"], ojson::parse(arguments));

  // "required" without parallel calls: one call of one of the tools, finish "tool_calls".
  ASSERT_EQ(r["required"].size(), 3u);
  for (const ojson& q : r["required"]) {
    EXPECT_EQ(q["finish_reason"], "tool_calls") << q.dump();
    EXPECT_TRUE(q["content"].is_null());
    ASSERT_EQ(q["calls"].size(), 1u) << q.dump();
    const std::string name = q["calls"][0]["name"];
    ASSERT_TRUE(name == "get_weather" || name == "get_time") << name;
    const ojson& schema = r[name == "get_weather" ? "weather_schema" : "time_schema"];
    EXPECT_EQ(ajv_verdicts(without_meta_schema(schema),
                           {q["calls"][0]["arguments"].get<std::string>()})[0],
              "valid");
    EXPECT_EQ(q["zod_accepts"], true);
  }

  // runTools on a named tool_choice calls our function once with the parsed arguments, and the
  // conversation it kept (the call and our answer) is a valid next request.
  const ojson& run = r["run_tools"];
  EXPECT_EQ(run["call"]["name"], "get_weather");
  EXPECT_EQ(run["called_with"], ojson::parse(run["call"]["arguments"].get<std::string>()));
  EXPECT_EQ(run["roles"], ojson::array({"user", "assistant", "tool"}));
  EXPECT_TRUE(run["follow_up_finish"] == "length" || run["follow_up_finish"] == "stop");
  EXPECT_TRUE(run["follow_up_content"].is_string());

  // Errors reach the caller as BadRequestError with the server's message and param.
  const ojson& bad_schema = r["errors"]["bad_schema"];
  EXPECT_EQ(bad_schema["raised"], "BadRequestError");
  EXPECT_EQ(bad_schema["status"], 400);
  EXPECT_EQ(bad_schema["param"], "response_format");
  EXPECT_NE(bad_schema["message"].get<std::string>().find("'strin'"), std::string::npos);
  const ojson& unknown_tool = r["errors"]["unknown_tool"];
  EXPECT_EQ(unknown_tool["raised"], "BadRequestError");
  EXPECT_EQ(unknown_tool["status"], 400);
  EXPECT_EQ(unknown_tool["param"], "tool_choice");
  EXPECT_NE(unknown_tool["message"].get<std::string>().find("'nope'"), std::string::npos);
  // ... and the server goes on: the first parse request again gives the same object.
  EXPECT_EQ(r["after_errors"]["finish_reason"], "stop");
  EXPECT_EQ(r["after_errors"]["parsed"], r["parsed"][0]["parsed"]);
}

}  // namespace
}  // namespace pagedllm::test
