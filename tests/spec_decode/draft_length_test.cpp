#include "spec_decode/draft_length.h"

#include <gtest/gtest.h>

#include "spec_decode/speculative_config.h"

namespace pagedllm {
namespace {

TEST(DraftLength, GrowsWhileAcceptedShrinksToWhatWasAcceptedAndCoolsDownOnMisses) {
  DraftLength d(4);
  EXPECT_EQ(d.take(), 4);
  d.record(4, 1);  // one accepted: next time two
  EXPECT_EQ(d.take(), 2);
  d.record(2, 2);  // all accepted: one more
  EXPECT_EQ(d.take(), 3);
  d.record(3, 0);  // nothing accepted: two steps without drafts, then one draft
  EXPECT_EQ(d.take(), 0);
  EXPECT_EQ(d.take(), 0);
  EXPECT_EQ(d.take(), 1);
  d.record(1, 0);  // again: the cool-down grows to 8
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d.take(), 0) << i;
  EXPECT_EQ(d.take(), 1);
  d.record(1, 1);  // an accepted draft resets it
  EXPECT_EQ(d.take(), 2);
  d.record(2, 0);
  EXPECT_EQ(d.take(), 0);
  EXPECT_EQ(d.take(), 0);
  EXPECT_EQ(d.take(), 1);
}

TEST(DraftLength, TheCoolDownIsBoundedSoARequestAlwaysTriesAgain) {
  DraftLength d(4);
  int longest = 0;
  for (int round = 0; round < 40; ++round) {
    int idle = 0;
    while (d.take() == 0) ++idle;
    longest = std::max(longest, idle);
    d.record(1, 0);
  }
  EXPECT_EQ(longest, 64);
  // Where nothing is ever accepted, 4 of the first 64 steps carry a draft.
  DraftLength never(4);
  int verify_steps = 0;
  for (int step = 0; step < 64; ++step) {
    const int k = never.take();
    if (k == 0) continue;
    ++verify_steps;
    never.record(k, 0);
  }
  EXPECT_EQ(verify_steps, 4);
}

TEST(SpeculativeConfig, ParsesVllmsFields) {
  const auto c = parse_speculative_config(
      R"({"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 3,
          "prompt_lookup_max": 6, "disable_by_batch_size": 8, "adaptive": false})");
  EXPECT_EQ(c.method, SpeculativeMethod::kNgram);
  EXPECT_EQ(c.num_speculative_tokens, 5);
  EXPECT_EQ(c.prompt_lookup_min, 3);
  EXPECT_EQ(c.prompt_lookup_max, 6);
  EXPECT_EQ(c.disable_by_batch_size, 8);
  EXPECT_FALSE(c.adaptive);
  EXPECT_EQ(describe(c), "ngram k=5 n=3..6 off_at_batch=8 fixed");
  EXPECT_FALSE(parse_speculative_config("").enabled());
  // prompt_lookup_min follows a smaller max.
  EXPECT_EQ(parse_speculative_config(R"({"method":"ngram","num_speculative_tokens":2,
                                         "prompt_lookup_max":1})")
                .prompt_lookup_min,
            1);
}

TEST(SpeculativeConfig, RefusesWhatCannotWorkNamingTheField) {
  auto error_of = [](const std::string& text) {
    try {
      parse_speculative_config(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram"})").find("num_speculative_tokens"), std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":"4"})").find("integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"magic","num_speculative_tokens":4})").find("magic"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":4,"colour":1})").find("colour"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"eagle","num_speculative_tokens":4})").find("not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method":"draft_model","num_speculative_tokens":4})").find("\"model\""),
            std::string::npos);
  const auto draft = parse_speculative_config(R"({"model":"d.gguf","num_speculative_tokens":3})");
  EXPECT_EQ(draft.method, SpeculativeMethod::kDraftModel);
  EXPECT_EQ(draft.draft_model, "d.gguf");
  EXPECT_NE(error_of(R"({"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":5})")
                .find("prompt_lookup_min"),
            std::string::npos);
}

}  // namespace
}  // namespace pagedllm
