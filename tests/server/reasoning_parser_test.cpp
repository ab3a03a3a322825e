#include "server/reasoning_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

namespace pagedllm::server {
namespace {

ReasoningDelta stream(ReasoningParser& parser, const std::vector<std::string_view>& pieces) {
  ReasoningDelta all;
  for (std::string_view piece : pieces) {
    const ReasoningDelta d = parser.feed(piece);
    all.reasoning += d.reasoning;
    all.content += d.content;
  }
  const ReasoningDelta last = parser.finish();
  all.reasoning += last.reasoning;
  all.content += last.content;
  return all;
}

// parse() of the whole text, after checking that streaming it split at every position, byte by
// byte, and in chunks of 2 to 5 bytes gives the same split.
ReasoningDelta parse_checking_streams(const std::string& name, const std::string& text,
                                      ReasoningParserOptions options = {}) {
  const ReasoningDelta whole = make_reasoning_parser(name, options)->parse(text);
  const std::string_view t(text);
  auto check = [&](const std::vector<std::string_view>& pieces, const std::string& how) {
    const ReasoningDelta streamed = stream(*make_reasoning_parser(name, options), pieces);
    EXPECT_EQ(streamed.reasoning, whole.reasoning) << how;
    EXPECT_EQ(streamed.content, whole.content) << how;
  };
  for (size_t split = 0; split <= text.size(); ++split) {
    check({t.substr(0, split), t.substr(split)}, "split at " + std::to_string(split));
  }
  for (size_t chunk = 1; chunk <= 5; ++chunk) {
    std::vector<std::string_view> pieces;
    for (size_t at = 0; at < text.size(); at += chunk) pieces.push_back(t.substr(at, chunk));
    check(pieces, "chunks of " + std::to_string(chunk));
  }
  return whole;
}

void expect_split(const ReasoningDelta& d, const std::string& reasoning,
                  const std::string& content) {
  EXPECT_EQ(d.reasoning, reasoning);
  EXPECT_EQ(d.content, content);
}

TEST(ReasoningParserRegistry, KnowsQwen3AndDeepseekR1AndRejectsOthers) {
  EXPECT_EQ(reasoning_parser_names(), (std::vector<std::string>{"deepseek_r1", "qwen3"}));
  try {
    make_reasoning_parser("granite");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown reasoning parser 'granite' (known: deepseek_r1, qwen3)");
  }
}

TEST(ReasoningParserDeepseekR1, SplitsAtTheClosingTagWithOrWithoutTheOpeningOne) {
  expect_split(parse_checking_streams("deepseek_r1",
                                      "<think>\nThe user wants 2+2.\n</think>\n\nThe answer is 4."),
               "\nThe user wants 2+2.\n", "\n\nThe answer is 4.");
  expect_split(parse_checking_streams("deepseek_r1", "2+2 is 4, 世界.</think>It is 4."),
               "2+2 is 4, 世界.", "It is 4.");
}

TEST(ReasoningParserDeepseekR1, AnUnclosedThinkIsAllReasoning) {
  expect_split(parse_checking_streams("deepseek_r1", "Let me think about <b> and </thin"),
               "Let me think about <b> and </thin", "");
  expect_split(parse_checking_streams("deepseek_r1", ""), "", "");
}

TEST(ReasoningParserDeepseekR1, ALaterThinkTagIsReasoningText) {
  expect_split(parse_checking_streams("deepseek_r1", "<think>a <think> b</think>c </think> d"),
               "a <think> b", "c </think> d");
}

TEST(ReasoningParserDeepseekR1, ReportsTheEndOfReasoningAsTheStreamReachesIt) {
  auto parser = make_reasoning_parser("deepseek_r1");
  EXPECT_FALSE(parser->reasoning_ended());
  ReasoningDelta d = parser->feed("<think>Hmm.</thi");
  expect_split(d, "Hmm.", "");
  EXPECT_FALSE(parser->reasoning_ended());
  d = parser->feed("nk>\n\nFour.");
  expect_split(d, "", "\n\nFour.");
  EXPECT_TRUE(parser->reasoning_ended());
  expect_split(parser->finish(), "", "");
}

TEST(ReasoningParserQwen3, SplitsThinkTagsAsDeepseekR1Does) {
  expect_split(parse_checking_streams("qwen3", "<think>\nOkay.\n</think>\n\nHello!"), "\nOkay.\n",
               "\n\nHello!");
  expect_split(parse_checking_streams("qwen3", "Okay, the prompt opened it.\n</think>\n\nHi"),
               "Okay, the prompt opened it.\n", "\n\nHi");
  expect_split(parse_checking_streams("qwen3", "Truncated reasoning"), "Truncated reasoning", "");
}

TEST(ReasoningParserQwen3, AToolCallWithAFunctionEndsTheReasoning) {
  expect_split(
      parse_checking_streams("qwen3",
                             "I need the weather.\n<tool_call>\n<function=get_weather>\n"
                             "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"),
      "I need the weather.\n",
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
      "</tool_call>");
}

TEST(ReasoningParserQwen3, AToolCallMentionedInTheReasoningDoesNotEndIt) {
  expect_split(parse_checking_streams("qwen3",
                                      "I could emit <tool_call> {json} or <tool_call>\n<functional "
                                      "style.</think>Done <tool_call>"),
               "I could emit <tool_call> {json} or <tool_call>\n<functional style.",
               "Done <tool_call>");
  expect_split(parse_checking_streams("qwen3", "Ends with <tool_call>\n<function"),
               "Ends with <tool_call>\n<function", "");
  expect_split(parse_checking_streams("deepseek_r1", "x<tool_call>\n<function=f>"),
               "x<tool_call>\n<function=f>", "");
}

TEST(ReasoningParserQwen3, WithThinkingDisabledTheOutputIsContentUnlessItOpensThink) {
  const ReasoningParserOptions no_thinking{.thinking_enabled = false};
  expect_split(parse_checking_streams("qwen3", "\nHello! </think> stays", no_thinking), "",
               "\nHello! </think> stays");
  expect_split(parse_checking_streams("qwen3", "\n<think>\nHmm\n</think>\n\nHi", no_thinking),
               "\nHmm\n", "\n\nHi");
  auto parser = make_reasoning_parser("qwen3", no_thinking);
  expect_split(parser->feed("  <thi"), "", "");
  EXPECT_FALSE(parser->reasoning_ended());
  expect_split(parser->feed("s is it"), "", "  <this is it");
  EXPECT_TRUE(parser->reasoning_ended());
}

TEST(ReasoningParserEveryRule, RandomTextsStreamAsTheyParseAndTextWithoutTagsIsKept) {
  static const std::vector<std::string> pieces = {
      "<think>", "</think>", "<tool_call>", "<function=f>", "<function ", "<functional", "\n", " ",
      "x",       "<",        "</thi",       "<thin",        "<tool_c",    "ü",           ">"};
  std::mt19937 rng(20261126);
  std::uniform_int_distribution<size_t> count(1, 16), pick(0, pieces.size() - 1), chunk(1, 6);
  const std::vector<std::pair<std::string, ReasoningParserOptions>> parsers = {
      {"deepseek_r1", {}}, {"qwen3", {}}, {"qwen3", {.thinking_enabled = false}}};
  for (int i = 0; i < 400; ++i) {
    std::string text;
    for (size_t n = count(rng); n > 0; --n) text += pieces[pick(rng)];
    for (const auto& [name, options] : parsers) {
      const ReasoningDelta whole = make_reasoning_parser(name, options)->parse(text);
      std::vector<std::string_view> split;
      for (size_t at = 0, n = 0; at < text.size(); at += n) {
        n = chunk(rng);
        split.push_back(std::string_view(text).substr(at, n));
      }
      ReasoningDelta streamed = stream(*make_reasoning_parser(name, options), split);
      EXPECT_EQ(streamed.reasoning, whole.reasoning) << name << " on " << text;
      EXPECT_EQ(streamed.content, whole.content) << name << " on " << text;
      if (text.find("think>") == std::string::npos) {
        EXPECT_EQ(whole.reasoning + whole.content, text) << name;
      }
    }
  }
}

}  // namespace
}  // namespace pagedllm::server
