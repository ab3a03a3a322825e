#include "server/tool_call_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

namespace pagedllm::server {
namespace {

using Json = nlohmann::ordered_json;

ToolCallIdGenerator counting_ids() {
  auto next = std::make_shared<int>(0);
  return [next] { return "call_" + std::to_string((*next)++); };
}

std::unique_ptr<ToolCallParser> make(const std::string& name, const Json& tools = Json::array()) {
  return make_tool_call_parser(name, tools, counting_ids());
}

// Feeds the pieces and reassembles the stream, checking the OpenAI delta shape on the way: a
// call's first delta carries its index, id and name; later ones only argument text.
ToolParseResult stream(ToolCallParser& parser, const std::vector<std::string_view>& pieces) {
  ToolParseResult result;
  auto take = [&](const ToolStreamDelta& delta) {
    result.content += delta.content;
    for (const ToolCallDelta& d : delta.tool_calls) {
      if (!d.id.empty()) {
        EXPECT_EQ(d.index, static_cast<int>(result.tool_calls.size()));
        EXPECT_FALSE(d.name.empty());
        result.tool_calls.push_back({d.id, d.name, d.arguments});
      } else {
        EXPECT_TRUE(d.name.empty());
        ASSERT_FALSE(result.tool_calls.empty());
        EXPECT_EQ(d.index, static_cast<int>(result.tool_calls.size()) - 1);
        result.tool_calls.back().arguments += d.arguments;
      }
    }
  };
  for (std::string_view piece : pieces) take(parser.feed(piece));
  take(parser.finish());
  return result;
}

void expect_same(const ToolParseResult& streamed, const ToolParseResult& whole,
                 const std::string& how) {
  EXPECT_EQ(streamed.content, whole.content) << how;
  ASSERT_EQ(streamed.tool_calls.size(), whole.tool_calls.size()) << how;
  for (size_t i = 0; i < whole.tool_calls.size(); ++i) {
    EXPECT_EQ(streamed.tool_calls[i].id, whole.tool_calls[i].id) << how;
    EXPECT_EQ(streamed.tool_calls[i].name, whole.tool_calls[i].name) << how;
    EXPECT_EQ(streamed.tool_calls[i].arguments, whole.tool_calls[i].arguments) << how;
  }
}

// parse() of the whole text, after checking that streaming it gives the same result however
// it is split: at every position into two pieces, byte by byte, and in chunks of 2 to 7 bytes.
ToolParseResult parse_checking_streams(const std::string& name, const std::string& text,
                                       const Json& tools = Json::array()) {
  const ToolParseResult whole = make(name, tools)->parse(text);
  for (size_t split = 0; split <= text.size(); ++split) {
    const std::string_view t(text);
    expect_same(stream(*make(name, tools), {t.substr(0, split), t.substr(split)}), whole,
                "split at " + std::to_string(split));
  }
  for (size_t chunk = 1; chunk <= 7; ++chunk) {
    std::vector<std::string_view> pieces;
    for (size_t at = 0; at < text.size(); at += chunk) {
      pieces.push_back(std::string_view(text).substr(at, chunk));
    }
    expect_same(stream(*make(name, tools), pieces), whole, "chunks of " + std::to_string(chunk));
  }
  return whole;
}

void expect_call(const ToolParseResult& result, size_t i, const std::string& name,
                 const std::string& arguments) {
  ASSERT_LT(i, result.tool_calls.size());
  EXPECT_EQ(result.tool_calls[i].id, "call_" + std::to_string(i));
  EXPECT_EQ(result.tool_calls[i].name, name);
  EXPECT_EQ(result.tool_calls[i].arguments, arguments);
  EXPECT_EQ(Json::parse(result.tool_calls[i].arguments), Json::parse(arguments));
}

void expect_only_content(const ToolParseResult& result, const std::string& content) {
  EXPECT_EQ(result.content, content);
  EXPECT_TRUE(result.tool_calls.empty());
}

// --- the registry ---

TEST(ToolCallParserRegistry, KnowsTheVllmNamesAndRejectsOthersListingThem) {
  const std::vector<std::string> names = tool_call_parser_names();
  for (const char* name : {"hermes", "llama3_json", "mistral", "qwen3_xml", "pythonic"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    EXPECT_NE(make_tool_call_parser(name, Json::array()), nullptr);
  }
  try {
    make_tool_call_parser("hermes2", Json::array());
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unknown tool call parser 'hermes2'"), std::string::npos);
    EXPECT_NE(message.find("hermes, llama3_json"), std::string::npos);
  }
}

bool is_alphanumeric(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isalnum(c) != 0; });
}

TEST(ToolCallParserRegistry, DefaultIdsLookLikeOpenAisAndMistralsOwn) {
  const std::string id = random_tool_call_id();
  ASSERT_EQ(id.size(), 29u);
  EXPECT_EQ(id.substr(0, 5), "call_");
  EXPECT_TRUE(is_alphanumeric(id.substr(5)));
  EXPECT_NE(random_tool_call_id(), id);

  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  const ToolParseResult hermes = make_tool_call_parser("hermes", Json::array())->parse(text);
  ASSERT_EQ(hermes.tool_calls.size(), 1u);
  EXPECT_EQ(hermes.tool_calls[0].id.substr(0, 5), "call_");
  EXPECT_EQ(hermes.tool_calls[0].id.size(), 29u);

  const ToolParseResult mistral = make_tool_call_parser("mistral", Json::array())
                                      ->parse("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]");
  ASSERT_EQ(mistral.tool_calls.size(), 1u);
  EXPECT_EQ(mistral.tool_calls[0].id.size(), 9u);
  EXPECT_TRUE(is_alphanumeric(mistral.tool_calls[0].id));
}

// --- hermes ---

TEST(ToolCallParserHermes, ReadsAQwenCallAndKeepsTheTextBeforeItAsContent) {
  const ToolParseResult r = parse_checking_streams(
      "hermes",
      "Let me check the weather.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>");
  EXPECT_EQ(r.content, "Let me check the weather.\n");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r, 0, "get_weather", R"({"city":"Paris","unit":"celsius"})");
}

TEST(ToolCallParserHermes, ReadsSeveralCallsAndDropsTheLayoutBetweenThem) {
  const ToolParseResult r = parse_checking_streams(
      "hermes",
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": "
      "\"CET\"}}\n</tool_call>\n");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "get_weather", R"({"city":"Paris"})");
  expect_call(r, 1, "get_time", R"({"zone":"CET"})");
}

TEST(ToolCallParserHermes, KeepsUnicodeNestingAndBracketsInsideStrings) {
  const ToolParseResult r = parse_checking_streams(
      "hermes",
      "<tool_call>\n{\"name\": \"translate\", \"arguments\": {\"text\": \"Grüße, 世界 🌍 "
      "a}b{\\\"q\\\"\", \"options\": {\"formal\": true, \"targets\": [\"fr\", \"ja\"], "
      "\"depth\": {\"n\": [1, {\"x\": null}], \"r\": 2.5}}}}\n</tool_call>");
  expect_call(r, 0, "translate",
              R"({"text":"Grüße, 世界 🌍 a}b{\"q\"","options":{"formal":true,"targets":["fr","ja"],)"
              R"("depth":{"n":[1,{"x":null}],"r":2.5}}})");
}

TEST(ToolCallParserHermes, MissingOrEmptyArgumentsBecomeAnEmptyObject) {
  const ToolParseResult r = parse_checking_streams(
      "hermes",
      "<tool_call>\n{\"name\": \"now\"}\n</tool_call>\n<tool_call>\n{\"name\": \"today\", "
      "\"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"later\", \"arguments\": "
      "\"{\\\"h\\\": 2}\"}\n</tool_call>");
  ASSERT_EQ(r.tool_calls.size(), 3u);
  expect_call(r, 0, "now", "{}");
  expect_call(r, 1, "today", "{}");
  expect_call(r, 2, "later", R"({"h":2})");
}

TEST(ToolCallParserHermes, MalformedOrTruncatedCallsFallBackToTheRawText) {
  const std::string bad_json =
      "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>";
  expect_only_content(parse_checking_streams("hermes", bad_json), bad_json);
  const std::string truncated = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"Par";
  expect_only_content(parse_checking_streams("hermes", truncated), truncated);
  const std::string no_name = "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>";
  expect_only_content(parse_checking_streams("hermes", no_name), no_name);
  const std::string prose = "Use <b>bold</b>; a <tool_call> tag wraps calls. <tool";
  expect_only_content(parse_checking_streams("hermes", prose), prose);
}

TEST(ToolCallParserHermes, ACompleteCallNeedsNoClosingTagAtTheEnd) {
  const ToolParseResult r = parse_checking_streams(
      "hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}\n</tool");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r, 0, "f", R"({"a":[1,2]})");
  EXPECT_EQ(r.content, "</tool");
}

TEST(ToolCallParserHermes, TextAfterACallIsContentAndAMalformedCallDoesNotHideALaterOne) {
  const ToolParseResult r = parse_checking_streams(
      "hermes",
      "<tool_call>\n{oops}\n</tool_call>\n<tool_call>\n{\"name\": \"f\", \"arguments\": "
      "{}}\n</tool_call>\nDone.");
  EXPECT_EQ(r.content, "<tool_call>\n{oops}\n</tool_call>\nDone.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r, 0, "f", "{}");
}

TEST(ToolCallParserHermes, StreamsContentAtOnceAndHoldsOnlyAPossibleMarker) {
  auto parser = make("hermes");
  EXPECT_EQ(parser->feed("Let me check.\n<to").content, "Let me check.\n");
  EXPECT_EQ(parser->feed("ol_call>\n{\"name\": \"f\",").content, "");
  ToolStreamDelta last = parser->feed(" \"arguments\": {\"a\": 1}}\n</tool_call>");
  EXPECT_EQ(last.content, "");
  ASSERT_EQ(last.tool_calls.size(), 2u);
  EXPECT_EQ(last.tool_calls[0].id, "call_0");
  EXPECT_EQ(last.tool_calls[0].name, "f");
  EXPECT_EQ(last.tool_calls[1].arguments, R"({"a":1})");
  EXPECT_EQ(parser->feed("\n").content, "");
  EXPECT_EQ(parser->feed("x <").content, "x ");
  EXPECT_EQ(parser->feed("b> y").content, "<b> y");
  EXPECT_EQ(parser->finish().content, "");
}

// --- llama3_json ---

TEST(ToolCallParserLlama3Json, ReadsACallThatIsTheWholeOutput) {
  const ToolParseResult r = parse_checking_streams(
      "llama3_json",
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco\", \"days\": 3}}");
  EXPECT_EQ(r.content, "");
  expect_call(r, 0, "get_weather", R"({"city":"San Francisco","days":3})");
}

TEST(ToolCallParserLlama3Json, ReadsCallsAfterThePythonTagSeparatedBySemicolons) {
  const ToolParseResult r = parse_checking_streams(
      "llama3_json",
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": \"ü\"}}; {\"name\": \"b\", "
      "\"arguments\": {}};{\"name\": \"c\", \"parameters\": {\"v\": [{\"w\": 1}]}}");
  ASSERT_EQ(r.tool_calls.size(), 3u);
  expect_call(r, 0, "a", R"({"x":"ü"})");
  expect_call(r, 1, "b", "{}");
  expect_call(r, 2, "c", R"({"v":[{"w":1}]})");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParserLlama3Json, TextAndJsonThatAreNotCallsStayContent) {
  const std::string answer = "Paris is the capital of France. {\"name\": \"x\"}";
  expect_only_content(parse_checking_streams("llama3_json", answer), answer);
  const std::string json_answer = "{\"answer\": 42, \"unit\": \"m\"}";
  expect_only_content(parse_checking_streams("llama3_json", json_answer), json_answer);
  const std::string truncated = "{\"name\": \"f\", \"parameters\": {\"a\": 1}";
  expect_only_content(parse_checking_streams("llama3_json", truncated), truncated);
}

// --- mistral ---

TEST(ToolCallParserMistral, ReadsTheJsonArrayFormWithContentBefore) {
  const ToolParseResult r = parse_checking_streams(
      "mistral",
      "I'll look both up.[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {}}]");
  EXPECT_EQ(r.content, "I'll look both up.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "get_weather", R"({"city":"Paris"})");
  expect_call(r, 1, "get_time", "{}");
}

TEST(ToolCallParserMistral, ReadsTheNamedFormsOfNewerTokenizers) {
  const ToolParseResult r = parse_checking_streams(
      "mistral",
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Zürich\", \"days\": [1, 2]}[TOOL_CALLS]"
      "get_time{}[TOOL_CALLS]get_news[CALL_ID]a1B2c3D4e[ARGS]{\"topic\": \"ai\"}");
  ASSERT_EQ(r.tool_calls.size(), 3u);
  expect_call(r, 0, "get_weather", R"({"city":"Zürich","days":[1,2]})");
  expect_call(r, 1, "get_time", "{}");
  expect_call(r, 2, "get_news", R"({"topic":"ai"})");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParserMistral, MalformedCallsFallBackToTheRawText) {
  const std::string truncated = "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}";
  expect_only_content(parse_checking_streams("mistral", truncated), truncated);
  const std::string bad_call_id = "[TOOL_CALLS]f[CALL_ID]x{\"a\": 1}";
  expect_only_content(parse_checking_streams("mistral", bad_call_id), bad_call_id);
  const std::string no_args = "[TOOL_CALLS]get_weather[ARGS]";
  expect_only_content(parse_checking_streams("mistral", no_args), no_args);
  const std::string mismatched = "[TOOL_CALLS][{\"name\": \"f\"]] and more";
  expect_only_content(parse_checking_streams("mistral", mismatched), mismatched);
}

// --- qwen3_xml ---

const Json& weather_tools() {
  static const Json tools = Json::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"},
        "metric": {"type": "boolean"}, "temp": {"type": "number"},
        "options": {"type": "object"}, "tags": {"type": "array"},
        "limit": {"type": ["integer", "null"]}, "note": {"description": "no type"}}}}},
    {"type": "function", "function": {"name": "write_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"},
        "content": {"type": "string"}}}}}])");
  return tools;
}

TEST(ToolCallParserQwen3Xml, ConvertsParameterValuesByTheirSchemaTypes) {
  const ToolParseResult r = parse_checking_streams(
      "qwen3_xml",
      "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\n123\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n"
      "<parameter=temp>\n21.5\n</parameter>\n<parameter=options>\n{\"a\": [1, 2]}\n"
      "</parameter>\n<parameter=tags>\n['x', \"y\"]\n</parameter>\n<parameter=limit>\n5\n"
      "</parameter>\n<parameter=note>\n7\n</parameter>\n</function>\n</tool_call>",
      weather_tools());
  EXPECT_EQ(r.content, "I'll check.\n");
  expect_call(r, 0, "get_weather",
              R"({"city":"123","days":3,"metric":true,"temp":21.5,"options":{"a":[1,2]},)"
              R"("tags":["x","y"],"limit":5,"note":"7"})");
}

TEST(ToolCallParserQwen3Xml, KeepsMultiLineValuesAndReadsSeveralCalls) {
  const ToolParseResult r = parse_checking_streams(
      "qwen3_xml",
      "<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a.py\n</parameter>\n"
      "<parameter=content>\ndef f():\n    return \"ü\"\n\n</parameter>\n</function>\n"
      "</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nnull\n"
      "</parameter>\n<parameter=days>\nthree\n</parameter>\n<parameter=temp>\n5.0\n"
      "</parameter>\n<parameter=extra>\n1\n</parameter>\n</function>\n</tool_call>",
      weather_tools());
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "write_file",
              R"({"path":"/tmp/a.py","content":"def f():\n    return \"ü\"\n"})");
  expect_call(r, 1, "get_weather", R"({"city":null,"days":"three","temp":5,"extra":"1"})");
}

TEST(ToolCallParserQwen3Xml, AcceptsABareFunctionAndAMissingClosingTagAtTheEnd) {
  const ToolParseResult bare = parse_checking_streams(
      "qwen3_xml",
      "Checking.\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
      "</tool_call>",
      weather_tools());
  EXPECT_EQ(bare.content, "Checking.\n");
  expect_call(bare, 0, "get_weather", R"({"city":"Paris"})");
  const ToolParseResult unclosed = parse_checking_streams(
      "qwen3_xml", "<tool_call>\n<function=get_time>\n</function>\n", weather_tools());
  EXPECT_EQ(unclosed.content, "");
  expect_call(unclosed, 0, "get_time", "{}");
}

TEST(ToolCallParserQwen3Xml, AnUnfinishedFunctionFallsBackToTheRawText) {
  const std::string truncated = "<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a";
  expect_only_content(parse_checking_streams("qwen3_xml", truncated, weather_tools()), truncated);
  const std::string prose = "Wrap calls in <tool_call> tags like <function=NAME";
  expect_only_content(parse_checking_streams("qwen3_xml", prose, weather_tools()), prose);
}

// --- pythonic ---

TEST(ToolCallParserPythonic, ReadsAListOfCallsWithKeywordArguments) {
  const ToolParseResult r =
      parse_checking_streams("pythonic", "[get_weather(city=\"Paris\", days=3), get_time()]");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "get_weather", R"({"city":"Paris","days":3})");
  expect_call(r, 1, "get_time", "{}");
}

TEST(ToolCallParserPythonic, ConvertsPythonLiteralsToJson) {
  const ToolParseResult r = parse_checking_streams(
      "pythonic",
      "[search(query='it\\'s \"ü\" \\u00e9', limit=-2, ratio=1.5e3, exact=True, "
      "filters={'lang': \"fr\", 'years': (2020, 2021), 3: None}, tags=[], "
      "text=\"\"\"two\nlines\"\"\", tail='a' \"b\",)]");
  expect_call(r, 0, "search",
              R"({"query":"it's \"ü\" é","limit":-2,"ratio":1500.0,"exact":true,)"
              R"("filters":{"lang":"fr","years":[2020,2021],"3":null},"tags":[],)"
              R"("text":"two\nlines","tail":"ab"})");
}

TEST(ToolCallParserPythonic, ReadsLlama4TagsAndTextAfterTheCalls) {
  const ToolParseResult r =
      parse_checking_streams("pythonic", "<|python_start|>[f(a=[1, 2.5])]<|python_end|>\nDone.");
  expect_call(r, 0, "f", R"({"a":[1,2.5]})");
  EXPECT_EQ(r.content, "Done.");
}

TEST(ToolCallParserPythonic, ProseAndMalformedCallsStayContent) {
  for (const std::string text :
       {"[1] Paris is the capital of France.", "[f(1)]", "[f(a=\"x\"", "[f(a=b)]",
        "See [the docs](https://x.y) here.", "Call [f(a=1)] later"}) {
    expect_only_content(parse_checking_streams("pythonic", text), text);
  }
}

// --- deepseek_v3 / deepseek_v31 ---

TEST(ToolCallParserDeepSeek, ReadsTheV3FencedAndTheV31PlainShapes) {
  const ToolParseResult v3 = parse_checking_streams(
      "deepseek_v3",
      "Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
      "```json\n{\"city\": \"Zürich\", \"days\": [1, 2]}\n```<｜tool▁call▁end｜>\n"
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  EXPECT_EQ(v3.content, "Let me look.");
  ASSERT_EQ(v3.tool_calls.size(), 2u);
  expect_call(v3, 0, "get_weather", R"({"city":"Zürich","days":[1,2]})");
  expect_call(v3, 1, "get_time", "{}");
  const ToolParseResult v31 = parse_checking_streams(
      "deepseek_v31",
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}"
      "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>\nDone.");
  EXPECT_EQ(v31.content, "Done.");
  ASSERT_EQ(v31.tool_calls.size(), 2u);
  expect_call(v31, 0, "get_weather", R"({"city":"Paris"})");
  expect_call(v31, 1, "get_time", "{}");
}

TEST(ToolCallParserDeepSeek, AnUnfinishedCallFallsBackToTheRawText) {
  const std::string truncated =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Pa";
  expect_only_content(parse_checking_streams("deepseek_v31", truncated), truncated);
  const std::string bad_json =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{oops}<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>";
  expect_only_content(parse_checking_streams("deepseek_v3", bad_json), bad_json);
}

// --- every format on random texts ---

// Texts stitched from pieces of every format's markup, valid calls, and stray brackets, quotes
// and whitespace, so that regions open, close, nest and break at every kind of place.
std::string random_markup_text(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
      "<tool_call>",
      "</tool_call>",
      "\n",
      " ",
      "{",
      "}",
      "[",
      "]",
      "(",
      ")",
      "\"",
      "'",
      "\\",
      ":",
      ", ",
      ";",
      "\"name\": \"f\"",
      "\"arguments\": ",
      "\"parameters\": ",
      "<function=f>",
      "</function>",
      "<parameter=a>",
      "</parameter>",
      "1",
      "x",
      "ü",
      "[TOOL_CALLS]",
      "[ARGS]",
      "get",
      "<|python_tag|>",
      "<|python_start|>",
      "<|python_end|>",
      "f(",
      "a=",
      "True",
      "<",
      "<tool",
      "{\"name\": \"g\", \"arguments\": {\"k\": [1, \"v\"]}}",
      "{\"name\": \"h\", \"parameters\": {}}",
      "g(b='s', c=[1, (2,)])",
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
      "<tool_call>\n<function=f>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>",
      "<｜tool▁calls▁begin｜>",
      "<｜tool▁call▁begin｜>",
      "<｜tool▁sep｜>",
      "<｜tool▁call▁end｜>",
      "<｜tool▁calls▁end｜>",
      "function",
      "```json\n",
      "\n```",
      "<｜tool"};
  std::uniform_int_distribution<size_t> count(1, 24), pick(0, pieces.size() - 1);
  std::string text;
  for (size_t n = count(rng); n > 0; --n) text += pieces[pick(rng)];
  return text;
}

TEST(ToolCallParserEveryFormat, RandomTextsStreamAsTheyParseAndNothingIsLostWithoutACall) {
  std::mt19937 rng(20261126);
  size_t with_calls = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string text = random_markup_text(rng);
    for (const std::string name :
         {"hermes", "llama3_json", "mistral", "qwen3_xml", "pythonic", "deepseek_v3"}) {
      const ToolParseResult whole = make(name)->parse(text);
      std::vector<std::string_view> pieces;
      std::uniform_int_distribution<size_t> chunk(1, 9);
      for (size_t at = 0; at < text.size();) {
        const size_t n = chunk(rng);
        pieces.push_back(std::string_view(text).substr(at, n));
        at += n;
      }
      expect_same(stream(*make(name), pieces), whole, name + " on " + text);
      if (whole.tool_calls.empty()) {
        EXPECT_EQ(whole.content, text) << name;
      } else {
        ++with_calls;
      }
      for (const ToolCall& call : whole.tool_calls) {
        EXPECT_TRUE(Json::parse(call.arguments).is_object()) << name << " on " << text;
      }
    }
  }
  EXPECT_GT(with_calls, 150u);
}

TEST(ToolCallParserEveryFormat, DeepNestingIsMalformedRatherThanACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string hermes =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": " + deep + "}}\n</tool_call>";
  expect_only_content(make("hermes")->parse(hermes), hermes);
  const std::string pythonic = "[f(a=" + deep + ")]";
  expect_only_content(make("pythonic")->parse(pythonic), pythonic);
  const ToolParseResult xml =
      make("qwen3_xml", weather_tools())
          ->parse("<tool_call>\n<function=get_weather>\n<parameter=tags>\n" + deep +
                  "\n</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(xml.tool_calls.size(), 1u);
  EXPECT_EQ(Json::parse(xml.tool_calls[0].arguments)["tags"], deep);  // kept as a string
}

}  // namespace
}  // namespace pagedllm::server
