// The pythonic parser against Python itself: tests/server/pythonic_reference.py reads the same
// texts with Python's ast and json modules at test time.
#include <gtest/gtest.h>

#include <fstream>

#include "server/tool_call_parser.h"
#include "test_paths.h"
#include "tokenizer/corpus.h"

namespace pagedllm::server {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<std::string>& pythonic_cases() {
  static const std::vector<std::string> cases = {
      R"py([get_weather(city="Paris", days=3)])py",
      R"py([a(), b(x=1), c(y=[1, 2, (3, 4)], z={"k": {"n": None}})])py",
      R"py([f(s='single', d="double", t='''tri"ple''', u="""x
y""", r=r'raw\n\d', e="tab\there\\ \x41\u00e9\U0001F30D")])py",
      R"py([f(n=-7, m=+8, big=123_456, x=1.25, y=-2e-3, z=.5, w=3., v=1E10)])py",
      R"py([f(b=True, c=False, n=None, k={1: 'int key', 2.5: 'float key', None: 0, False: 1})])py",
      R"py([f(text="Grüße, 世界 🌍 \"quoted\" {braces} [brackets] (parens)")])py",
      R"py([f(a='x' "y" 'z', trailing=1,), g(),])py",
      "[\n  f(\n    a=1,\n    b=[\n      'x',\n    ],\n  ),\n]",
      R"py([f(nested=[[[[{"d": [{"e": ()}]}]]]])])py",
      R"py([f(1)])py",
      R"py([f(a=b)])py",
      R"py([f(**kw)])py",
      R"py([obj.method(a=1)])py",
      R"py([f(a=1) g(b=2)])py",
      R"py([f(a=1])py",
      R"py([f(a="unterminated)])py",
      R"py([f(a=1, a=2)])py",
      R"py([f(a=[1, 2,, 3])])py",
  };
  return cases;
}

TEST(ToolCallParserPythonicReference, ReadsCallsExactlyAsPythonsAstAndJsonDo) {
  const std::vector<std::string>& cases = pythonic_cases();
  const std::string cases_path = test::temp_path("pythonic-cases.json");
  std::ofstream(cases_path) << Json(cases).dump();
  const Json reference =
      Json::parse(test::run_command("/usr/bin/python3 " + std::string(PAGEDLLM_SOURCE_DIR) +
                                    "/tests/server/pythonic_reference.py " + cases_path));
  ASSERT_EQ(reference.size(), cases.size());
  size_t accepted = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ToolParseResult got =
        make_tool_call_parser("pythonic", Json::array(), [] { return "id"; })->parse(cases[i]);
    const Json& want = reference[i];
    if (want.contains("error")) {
      EXPECT_TRUE(got.tool_calls.empty()) << cases[i] << " (Python: " << want["error"] << ")";
      EXPECT_EQ(got.content, cases[i]);
      continue;
    }
    ++accepted;
    EXPECT_EQ(got.content, "") << cases[i];
    ASSERT_EQ(got.tool_calls.size(), want["calls"].size()) << cases[i];
    for (size_t c = 0; c < got.tool_calls.size(); ++c) {
      EXPECT_EQ(got.tool_calls[c].name, want["calls"][c]["name"]) << cases[i];
      EXPECT_EQ(got.tool_calls[c].arguments, want["calls"][c]["arguments"]) << cases[i];
    }
  }
  EXPECT_EQ(accepted, 10u);  // a repeated keyword: the last one wins, as in ast
}

}  // namespace
}  // namespace pagedllm::server
