// Speculative decoding end to end on the shared trained models: with n-gram proposals the
// greedy tokens are those of a run without speculation (and the models' known answers), under
// batching, chunked prefill, preemption, prefix caching and any block size; seeded sampling
// gives the very same tokens too (the verifier samples each position as a one-token step
// would); a replay proposer that knows the answer gets every draft accepted, in fewer steps.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "loader/model_export.h"
#include "model/presets.h"
#include "pagedllm/engine.h"
#include "test_paths.h"
#include "tokenizer/sentencepiece_bpe.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

struct SpeculationModelCase {
  const char* name;
  const char* model;
  const char* tokenizer;
  const char* expected;
};

const char* kNgram = R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1,
                         "prompt_lookup_max": 3, "adaptive": false})";

class SpeculativeDecoding : public ::testing::TestWithParam<SpeculationModelCase> {
 protected:
  // The model drafting for itself (a llama2.c checkpoint needs its tokenizer only as a target).
  std::string self_draft(int k = 4) const {
    return R"({"method": "draft_model", "num_speculative_tokens": )" + std::to_string(k) +
           R"(, "adaptive": false, "model": ")" + test::model_path(GetParam().model) + R"("})";
  }

  EngineOptions options(const std::string& speculative = "") const {
    EngineOptions o;
    o.model = test::model_path(GetParam().model);
    if (GetParam().tokenizer[0]) o.tokenizer = test::model_path(GetParam().tokenizer);
    o.max_model_len = 128;
    o.max_num_seqs = 32;
    o.max_num_batched_tokens = 512;
    o.num_blocks = 32 * 8 + 1;
    o.threads = 2;
    o.speculative_config = speculative;
    return o;
  }

  // Prompts that repeat themselves, so that prompt lookup has something to find.
  std::vector<Ids> prompts(int vocab, bool shared_prefix) const {
    std::mt19937 rng(11);
    Ids prefix = {1};
    for (int i = 0; i < 24; ++i) prefix.push_back(static_cast<int32_t>(3 + rng() % (vocab - 3)));
    std::vector<Ids> out;
    for (int k = 0; k < 12; ++k) {
      Ids p = shared_prefix ? Ids(prefix.begin(), prefix.begin() + 1 + (k % 3) * 8) : Ids{1};
      Ids phrase;
      for (int i = 0; i < 3 + static_cast<int>(rng() % 5); ++i)
        phrase.push_back(static_cast<int32_t>(3 + rng() % (vocab - 3)));
      for (int rep = 0; rep < 1 + k % 3; ++rep) p.insert(p.end(), phrase.begin(), phrase.end());
      out.push_back(std::move(p));
    }
    return out;
  }

  static SamplingParams greedy(int max_tokens = 40) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }

  static std::vector<Ids> run(const EngineOptions& o, const std::vector<Ids>& ps,
                              const SamplingParams& sp, EngineStats* stats = nullptr,
                              int* steps = nullptr) {
    Engine e(o);
    for (const auto& p : ps) e.add_request(p, sp, "r" + std::to_string(&p - ps.data()));
    std::map<std::string, Ids> got;
    int n = 0;
    while (e.has_unfinished_requests()) {
      if (++n > 20000) {
        ADD_FAILURE() << "the engine stopped making progress";
        break;
      }
      for (const auto& out : e.step()) got[out.request_id] = out.token_ids;
    }
    if (stats) *stats = e.stats();
    if (steps) *steps = n;
    std::vector<Ids> result;
    for (size_t i = 0; i < ps.size(); ++i) result.push_back(got["r" + std::to_string(i)]);
    return result;
  }
};

TEST_P(SpeculativeDecoding, GreedyTokensAreTheKnownAnswerWithNgramDrafts) {
  std::ifstream f(test::model_path(GetParam().expected));
  const auto expected = nlohmann::json::parse(f);
  const Ids want = expected.at("greedy_ids").get<Ids>();
  EngineOptions o = options(kNgram);
  o.max_model_len = static_cast<int>(want.size()) + 1;
  o.num_blocks = (o.max_model_len + 15) / 16 + 1;
  EngineStats stats;
  const auto got = run(o, {{1}}, greedy(static_cast<int>(want.size())), &stats);
  EXPECT_EQ(got[0], want);
  EXPECT_GT(stats.spec_num_draft_tokens, 0);
  EXPECT_GT(stats.spec_num_accepted_tokens, 0) << "trained models repeat themselves";
}

TEST_P(SpeculativeDecoding, GreedyTokensMatchARunWithoutSpeculationHoweverBatched) {
  int vocab;
  {
    Engine probe(options());
    vocab = probe.vocab_size();
  }
  // Prompts with shared prefixes, so that the prefix cache serves some of them.
  for (bool shared : {true}) {
    const auto ps = prompts(vocab, shared);
    const auto want = run(options(), ps, greedy());
    EngineStats stats;
    EXPECT_EQ(run(options(kNgram), ps, greedy(), &stats), want) << "batched, prefix caching";
    if (shared) {
      EXPECT_GT(stats.prefix_cache_hits, 0);
    }
    EXPECT_GT(stats.spec_num_accepted_tokens, 0);
    EXPECT_LT(stats.spec_num_accepted_tokens, stats.spec_num_draft_tokens);
    // The model as its own draft: every greedy draft is the target's own token.
    EXPECT_EQ(run(options(self_draft()), ps, greedy(), &stats), want) << "self-draft";
    EXPECT_GT(stats.spec_num_draft_tokens, 0);
    EXPECT_EQ(stats.spec_num_accepted_tokens, stats.spec_num_draft_tokens);

    EngineOptions o = options(kNgram);
    o.max_num_batched_tokens = 16;
    o.max_num_seqs = 8;
    EXPECT_EQ(run(o, ps, greedy()), want) << "budget 16: chunked prefill, drafts cut short";

    o = options(kNgram);
    o.block_size = 1;
    o.num_blocks = 32 * 128 + 1;
    EXPECT_EQ(run(o, ps, greedy()), want) << "block size 1";

    for (const std::string& spec : {std::string(kNgram), self_draft(3)}) {
      o = options(spec);
      o.num_blocks = 8 + 1 + 4;
      EXPECT_EQ(run(o, ps, greedy(), &stats), want) << "tiny pool " << spec;
      EXPECT_GT(stats.num_preemptions, 0);
    }
    o = options(self_draft(2));
    o.max_num_batched_tokens = 16;
    o.max_num_seqs = 8;
    EXPECT_EQ(run(o, ps, greedy(), &stats), want) << "self-draft, budget 16";
    EXPECT_EQ(stats.spec_num_accepted_tokens, stats.spec_num_draft_tokens);

    o = options(kNgram);
    o.enable_prefix_caching = false;
    EXPECT_EQ(run(o, ps, greedy(), &stats), want) << "prefix caching off";
  }
}

TEST_P(SpeculativeDecoding, SeededSamplingGivesTheSameTokensAsWithoutSpeculation) {
  int vocab;
  {
    Engine probe(options());
    vocab = probe.vocab_size();
  }
  const auto ps = prompts(vocab, false);
  for (uint64_t seed : {77u, 4242u}) {
    SamplingParams sp = greedy();
    sp.temperature = 0.8f;
    sp.top_p = 0.95f;
    sp.top_k = seed == 77u ? 20 : 0;
    sp.frequency_penalty = seed == 4242u ? 0.3f : 0.0f;
    sp.seed = seed;
    sp.logprobs = 2;
    EngineStats stats;
    const auto want = run(options(), ps, sp);
    EXPECT_EQ(run(options(kNgram), ps, sp, &stats), want) << "seed " << seed;
    EXPECT_GT(stats.spec_num_accepted_tokens, 0);
    EXPECT_EQ(run(options(self_draft()), ps, sp, &stats), want) << "self-draft, seed " << seed;
    EXPECT_GT(stats.spec_num_accepted_tokens, 0);
  }
}

TEST_P(SpeculativeDecoding, LogprobsAreTheTargetModelsAsWithoutSpeculation) {
  const std::vector<Ids> ps = {{1}};
  SamplingParams sp = greedy(100);
  sp.logprobs = 3;
  Engine plain(options());
  Engine spec(options(kNgram));
  const RequestOutput a = plain.generate(ps, sp)[0];
  const RequestOutput b = spec.generate(ps, sp)[0];
  ASSERT_EQ(a.token_ids, b.token_ids);
  ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
  for (size_t i = 0; i < a.logprobs.size(); ++i) {
    EXPECT_NEAR(a.logprobs[i].logprob, b.logprobs[i].logprob, 1e-4) << i;
    ASSERT_EQ(a.logprobs[i].top_logprobs.size(), b.logprobs[i].top_logprobs.size());
    for (size_t j = 0; j < a.logprobs[i].top_logprobs.size(); ++j) {
      EXPECT_EQ(a.logprobs[i].top_logprobs[j].token_id, b.logprobs[i].top_logprobs[j].token_id);
      EXPECT_NEAR(a.logprobs[i].top_logprobs[j].logprob, b.logprobs[i].top_logprobs[j].logprob,
                  1e-4);
    }
  }
  EXPECT_GT(spec.stats().spec_num_accepted_tokens, 0);
}

// The model as its own draft: a proposer that replays the model's own greedy answer. Every
// proposal is accepted, each verify step yields K + 1 tokens, and the answer does not change.
TEST_P(SpeculativeDecoding, TheModelsOwnAnswerAsDraftsIsAcceptedWhole) {
  int vocab;
  {
    Engine probe(options());
    vocab = probe.vocab_size();
  }
  const auto ps = prompts(vocab, false);
  const SamplingParams sp = greedy(41);
  int plain_steps = 0;
  const auto want = run(options(), ps, sp, nullptr, &plain_steps);
  EngineOptions o = options(R"({"method": "replay", "num_speculative_tokens": 4})");
  for (size_t i = 0; i < ps.size(); ++i) {
    Ids seq = ps[i];
    seq.insert(seq.end(), want[i].begin(), want[i].end());
    o.speculative_replay.push_back(std::move(seq));
  }
  EngineStats stats;
  int steps = 0;
  EXPECT_EQ(run(o, ps, sp, &stats, &steps), want);
  EXPECT_GT(stats.spec_num_draft_tokens, 0);
  EXPECT_EQ(stats.spec_num_accepted_tokens, stats.spec_num_draft_tokens);
  // 1 prefill step, then 40 tokens in steps of 5.
  EXPECT_EQ(steps, 1 + 8);
  EXPECT_EQ(plain_steps, 41);
  ASSERT_EQ(stats.spec_accepted_per_position.size(), 4u);
  for (int64_t n : stats.spec_accepted_per_position) EXPECT_EQ(n, stats.spec_num_drafts);
}

// Two trained models with vocabularies of the same size but different tokenizers: the drafts are
// mostly wrong, and the answer is still the target's alone.
TEST(SpeculativeDecodingDraftModel, ADifferentModelDraftsAndTheAnswerStaysTheTargets) {
  EngineOptions o;
  o.model = test::model_path("stories260K/stories260K.gguf");
  o.max_model_len = 128;
  o.num_blocks = 64;
  o.threads = 2;
  const std::vector<Ids> prompts = {{1}, {1, 403, 407}};
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.max_tokens = 100;
  sp.ignore_eos = true;
  std::vector<Ids> want;
  {
    Engine e(o);
    for (const auto& out : e.generate(prompts, sp)) want.push_back(out.token_ids);
  }
  o.speculative_config = R"({"method": "draft_model", "num_speculative_tokens": 4, "model": ")" +
                         test::model_path("aidreams260K/aidreams260K.bin") + R"("})";
  Engine e(o);
  std::vector<Ids> got;
  for (const auto& out : e.generate(prompts, sp)) got.push_back(out.token_ids);
  EXPECT_EQ(got, want);
  EXPECT_GT(e.stats().spec_num_draft_tokens, 0);
}

TEST(SpeculativeDecodingDraftModel, ADraftWithAnotherVocabularyIsRefusedAtStartUp) {
  EngineOptions o;
  o.model = test::model_path("babyllama/model5000.bin");
  o.tokenizer = test::model_path("babyllama/tok105.bin");
  o.max_model_len = 128;
  o.num_blocks = 64;
  o.speculative_config = R"({"method": "draft_model", "num_speculative_tokens": 4, "model": ")" +
                         test::model_path("stories260K/stories260K.gguf") + R"("})";
  try {
    Engine e(o);
    FAIL() << "a draft with 512 tokens drafted for a 105-token vocabulary";
  } catch (const std::exception& err) {
    EXPECT_NE(
        std::string(err.what()).find("vocabulary (512 tokens) differs from the target's (105)"),
        std::string::npos)
        << err.what();
  }
  o.speculative_config =
      R"({"method": "draft_model", "num_speculative_tokens": 4, "model": "/nope"})";
  EXPECT_THROW(Engine{o}, std::exception);
}

// A small random-weight GGUF draft of 512 tokens whose vocabulary is the llama2.c tokenizer at
// tokenizer_bin, for stories260K (512 tokens, context 2048).
std::string draft_with_vocabulary(const std::string& name, const std::string& tokenizer_bin) {
  ExportSpec spec;
  spec.config = preset_config("tiny");
  spec.config.vocab_size = 512;
  spec.config.max_seq_len = 2048;
  spec.source_rope = RopeStyle::kInterleaved;
  spec.vocab = read_llama2c_tokenizer(test::model_path(tokenizer_bin), 512);
  const std::string path = test::temp_path(name);
  export_gguf(spec, random_weights(spec.config, 5), path);
  return path;
}

// Same size, other tokens: aidreams260K's 512 tokens are not stories260K's, so a draft that
// carries them is refused by token text (a size check alone let it through), and one that
// carries stories260K's own tokenizer drafts.
TEST(SpeculativeDecodingDraftModel, ADraftWhoseTokenTextsDifferIsRefusedAtStartUp) {
  EngineOptions o;
  o.model = test::model_path("stories260K/stories260K.gguf");
  o.max_model_len = 256;
  o.num_blocks = 64;
  const auto config = [](const std::string& draft) {
    return R"({"method": "draft_model", "num_speculative_tokens": 4, "model": ")" + draft + R"("})";
  };
  o.speculative_config =
      config(draft_with_vocabulary("draft-aidreams-vocab.gguf", "aidreams260K/tok512.bin"));
  try {
    Engine e(o);
    FAIL() << "a draft with aidreams260K's vocabulary drafted for stories260K";
  } catch (const std::exception& err) {
    EXPECT_NE(std::string(err.what())
                  .find("the draft model's vocabulary differs from the target's (251 of 512 "
                        "tokens; the first, token 259,"),
              std::string::npos)
        << err.what();
  }
  o.speculative_config =
      config(draft_with_vocabulary("draft-stories-vocab.gguf", "stories260K/tok512.bin"));
  Engine e(o);
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.max_tokens = 24;
  sp.ignore_eos = true;
  EXPECT_EQ(e.generate(std::vector<std::vector<int32_t>>{{1}}, sp).at(0).token_ids.size(), 24u);
  EXPECT_GT(e.stats().spec_num_draft_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, SpeculativeDecoding,
    ::testing::Values(SpeculationModelCase{"stories260K_gguf", "stories260K/stories260K.gguf", "",
                                           "stories260K/expected.json"},
                      SpeculationModelCase{"babyllama", "babyllama/model5000.bin",
                                           "babyllama/tok105.bin", "babyllama/expected.json"},
                      SpeculationModelCase{"aidreams260K", "aidreams260K/aidreams260K.bin",
                                           "aidreams260K/tok512.bin",
                                           "aidreams260K/expected.json"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace pagedllm
