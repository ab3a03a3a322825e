// The scheduler's image side: encoder work scheduled with the chunk that first reaches an
// image, within the encoder budget and cache, released once computed; prefix caching keyed by
// the image. A mirror of the worker's encoder cache checks, at every step, that each scheduled
// placeholder token finds its image's output there.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "core/scheduler.h"
#include "sanitizer_build.h"

namespace pagedllm {
namespace {

struct Image {
  std::string id;
  int offset;
  int length;
};

std::unique_ptr<Request> image_request(const std::string& id, int prompt_len,
                                       const std::vector<Image>& images, int max_tokens = 2,
                                       int32_t token = 7) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  auto r = std::make_unique<Request>(
      id, std::vector<int32_t>(static_cast<size_t>(prompt_len), token), p);
  for (const Image& im : images)
    r->mm_features.push_back({im.id, im.offset, im.length, std::make_shared<EncoderInput>()});
  return r;
}

EngineConfig config(int chunk, int encoder_budget, int cache_size, int num_blocks = 256) {
  EngineConfig c;
  c.cache.block_size = 4;
  c.cache.num_blocks = num_blocks;
  c.cache.enable_prefix_caching = true;
  c.scheduler.max_model_len = 64;
  c.scheduler.max_num_batched_tokens = chunk;
  c.scheduler.max_num_seqs = std::min(8, chunk);
  c.scheduler.max_num_encoder_input_tokens = encoder_budget;
  c.scheduler.encoder_cache_size = cache_size;
  return c;
}

class EncoderDriver {
 public:
  explicit EncoderDriver(const EngineConfig& c) : config_(c), scheduler(c) {}

  void step() {
    scheduler.schedule(out);
    for (const std::string& id : out.free_encoder_identifiers)
      ASSERT_EQ(worker_cache.erase(id), 1u) << "freed an output the worker does not hold: " << id;
    int64_t encoded_tokens = 0;
    for (const ScheduledEncoderInputs& e : out.scheduled_encoder_inputs) {
      const Request* r = scheduler.find_request(e.req_id);
      for (int i : e.inputs) {
        const MultiModalFeature& f = r->mm_features[static_cast<size_t>(i)];
        ASSERT_FALSE(worker_cache.count(f.identifier)) << "encoded twice while cached";
        worker_cache[f.identifier] = f.length;
        encoded_tokens += f.length;
        encoded[e.req_id + "/" + f.identifier].push_back(steps);
      }
    }
    EXPECT_LE(encoded_tokens, config_.scheduler.max_num_encoder_input_tokens);
    int64_t held = 0;
    for (const auto& [id, length] : worker_cache) {
      held += length;
      EXPECT_TRUE(scheduler.encoder_cache().is_cached(id));
    }
    EXPECT_LE(held, config_.scheduler.encoder_cache_size);
    check_gathers();
    runner_out.resize(out.num_scheduled_tokens.size());
    for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
      runner_out.req_ids[k] = out.num_scheduled_tokens[k].req_id;
      runner_out.sampled_token_ids[k] = {3};
    }
    outputs.clear();
    scheduler.update_from_output(out, runner_out, outputs);
    for (const auto& o : outputs)
      if (o.finish_reason) finished.insert(o.req_id);
    ++steps;
  }

  void run(int max_steps = 2000) {
    while (scheduler.has_unfinished_requests() && steps < max_steps) step();
    ASSERT_FALSE(scheduler.has_unfinished_requests()) << "requests starved";
  }

  const EngineConfig config_;
  Scheduler scheduler;
  SchedulerOutput out;
  ModelRunnerOutput runner_out;
  std::vector<EngineCoreOutput> outputs;
  std::map<std::string, int64_t> worker_cache;
  std::map<std::string, std::vector<int>> encoded;  // "req/image" -> steps that encoded it
  std::map<std::string, int> scheduled_starts;      // req -> first token of its last chunk
  std::set<std::string> finished;
  int steps = 0;

 private:
  // What the worker's gather needs: every placeholder in a scheduled range has its output.
  void check_gathers() {
    for (const ScheduledTokens& s : out.num_scheduled_tokens) {
      const Request* r = scheduler.find_request(s.req_id);
      const int end = r->num_computed_tokens, start = end - s.num_tokens;
      scheduled_starts[s.req_id] = start;
      for (const MultiModalFeature& f : r->mm_features) {
        if (f.offset >= end || f.end() <= start) continue;
        EXPECT_TRUE(worker_cache.count(f.identifier))
            << s.req_id << " computes tokens of " << f.identifier << " without its output";
      }
    }
  }
};

TEST(SchedulerEncoder, AnImageIsEncodedInTheStepWhoseChunkFirstReachesItsPlaceholders) {
  EncoderDriver d(config(8, 64, 64));
  d.scheduler.add_request(image_request("r", 40, {{"img", 10, 16}}));
  d.step();  // [0, 8)
  EXPECT_TRUE(d.out.scheduled_encoder_inputs.empty());
  d.step();  // [8, 16): the image starts at 10
  ASSERT_EQ(d.out.scheduled_encoder_inputs.size(), 1u);
  EXPECT_EQ(d.out.scheduled_encoder_inputs[0].inputs, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(d.scheduler.encoder_cache().usage(), 16.0 / 64.0);
  d.step();  // [16, 24): still needs it
  EXPECT_TRUE(d.out.scheduled_encoder_inputs.empty());
  EXPECT_DOUBLE_EQ(d.scheduler.encoder_cache().usage(), 16.0 / 64.0);
  d.step();  // [24, 32): past its end (26), released after the step
  EXPECT_DOUBLE_EQ(d.scheduler.encoder_cache().usage(), 0.0);
  d.run();
  EXPECT_EQ(d.encoded["r/img"], std::vector<int>{1});
}

TEST(SchedulerEncoder, EveryChunkSizeAndOffsetEncodesEachImageOnceAndGathersEveryToken) {
  for (int chunk = 1; chunk <= 20; ++chunk) {
    for (int offset = 0; offset <= 6; ++offset) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " offset " + std::to_string(offset));
      EncoderDriver d(config(chunk, 12, 24));
      d.scheduler.add_request(
          image_request("r", 40, {{"a", offset, 9}, {"b", offset + 11, 12}, {"c", 36, 3}}));
      d.run();
      EXPECT_EQ(d.encoded["r/a"].size(), 1u);
      EXPECT_EQ(d.encoded["r/b"].size(), 1u);
      EXPECT_EQ(d.encoded["r/c"].size(), 1u);
      EXPECT_EQ(d.scheduler.encoder_cache().num_freeable_slots(), 24);
    }
  }
}

TEST(SchedulerEncoder, AShortEncoderBudgetCutsTheNextChunkJustBeforeTheImage) {
  EncoderDriver d(config(64, 16, 64));
  d.scheduler.add_request(image_request("a", 20, {{"x", 2, 12}}));
  d.scheduler.add_request(image_request("b", 20, {{"y", 5, 12}}));
  d.step();
  ASSERT_EQ(d.out.num_scheduled_tokens.size(), 2u);
  EXPECT_EQ(d.out.num_scheduled_tokens[0].num_tokens, 20);
  EXPECT_EQ(d.out.num_scheduled_tokens[1].num_tokens, 5);  // stops before y: 12 + 12 > 16
  d.step();
  ASSERT_EQ(d.out.scheduled_encoder_inputs.size(), 1u);
  EXPECT_EQ(d.out.scheduled_encoder_inputs[0].req_id, "b");
  d.run();
}

TEST(SchedulerEncoder, WithoutChunkedPrefillAnImageIsNeverSplitAcrossSteps) {
  EngineConfig c = config(16, 64, 64);
  c.scheduler.enable_chunked_prefill = false;
  c.scheduler.max_num_batched_tokens = 64;
  EncoderDriver d(c);
  d.scheduler.add_request(image_request("r", 30, {{"x", 4, 20}}));
  d.step();
  EXPECT_EQ(d.out.num_scheduled_tokens[0].num_tokens, 30);
  d.run();
}

TEST(SchedulerEncoder, AnImageLargerThanTheBudgetOrTheCacheIsRefusedWithTheReason) {
  Scheduler s(config(64, 16, 32));
  try {
    s.add_request(image_request("big", 40, {{"x", 1, 20}}));
    FAIL() << "accepted";
  } catch (const RequestRejected& e) {
    EXPECT_NE(std::string(e.what()).find("an image of 20 tokens exceeds the encoder budget (16"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(s.add_request(image_request("outside", 10, {{"x", 5, 8}})), RequestRejected);
  EXPECT_THROW(s.add_request(image_request("overlap", 30, {{"x", 1, 8}, {"y", 5, 4}})),
               RequestRejected);
}

TEST(SchedulerEncoder, AFinishedRequestsImageIsReusedByTheNextRequestWithoutEncoding) {
  EncoderDriver d(config(64, 64, 64));
  d.scheduler.add_request(image_request("a", 24, {{"x", 2, 12}}, 2, 7));
  d.run();
  // Other text, the same image: the KV differs but the encoder output is still cached.
  d.scheduler.add_request(image_request("b", 24, {{"x", 2, 12}}, 2, 9));
  d.run();
  EXPECT_EQ(d.encoded["a/x"].size(), 1u);
  EXPECT_EQ(d.encoded.count("b/x"), 0u);
}

int cached_tokens_of(Scheduler& s, std::unique_ptr<Request> r) {
  const std::string id = r->id();
  s.add_request(std::move(r));
  SchedulerOutput out;
  s.schedule(out);
  const int hit = s.find_request(id)->num_cached_tokens;
  ModelRunnerOutput ro;
  ro.resize(out.num_scheduled_tokens.size());
  for (size_t k = 0; k < out.num_scheduled_tokens.size(); ++k) {
    ro.req_ids[k] = out.num_scheduled_tokens[k].req_id;
    ro.sampled_token_ids[k] = {3};
  }
  std::vector<EngineCoreOutput> outputs;
  s.update_from_output(out, ro, outputs);
  s.finish_requests(std::vector<std::string>{id}, RequestStatus::kFinishedAborted);
  return hit;
}

TEST(SchedulerEncoder, PrefixCachingSharesBlocksForTheSameImageAndNotForAnother) {
  Scheduler s(config(64, 64, 64));
  // 40 equal tokens; the image covers [9, 21), so blocks 2..5 (tokens 8..23) carry its id.
  EXPECT_EQ(cached_tokens_of(s, image_request("first", 40, {{"x", 9, 12}})), 0);
  EXPECT_EQ(cached_tokens_of(s, image_request("same", 40, {{"x", 9, 12}})), 36);
  EXPECT_EQ(cached_tokens_of(s, image_request("other", 40, {{"y", 9, 12}})), 8);
  EXPECT_EQ(cached_tokens_of(s, image_request("text", 40, {})), 8);
}

TEST(SchedulerEncoder, RandomSchedulesWithSharedImagesAndPreemptionKeepTheCachesConsistent) {
  int64_t preemptions = 0, images = 0;
#ifdef PAGEDLLM_TEST_ASAN
  const int seeds = 15;  // the sanitizer run checks memory; the plain run checks 60 schedules
#else
  const int seeds = 60;
#endif
  for (int seed = 0; seed < seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(static_cast<unsigned>(seed));
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int budget = pick(8, 24);
    EncoderDriver d(config(pick(1, 24), budget, budget + pick(0, 24), pick(18, 60)));
    int added = 0;
    while (added < 12 || d.scheduler.has_unfinished_requests()) {
      if (added < 12 && pick(0, 2) == 0) {
        std::vector<Image> images;
        int pos = pick(0, 4);
        while (images.size() < 3 && pos < 40) {
          const int length = pick(1, budget);
          if (pos + length > 48) break;
          images.push_back(
              {"img" + std::to_string(pick(0, 5)) + "-" + std::to_string(length), pos, length});
          pos += length + pick(0, 6);
        }
        // One draw per statement: the order of draws must not depend on the compiler's order
        // of evaluating arguments. Images end by token 48, so the cap keeps them all.
        const int max_tokens = pick(1, 6);
        const int32_t token = pick(1, 3);
        const int prompt = std::min(std::max(pos, 1) + pick(0, 8), 64 - max_tokens);
        d.scheduler.add_request(
            image_request("r" + std::to_string(added++), prompt, images, max_tokens, token));
      }
      d.step();
      if (HasFatalFailure() || d.steps > 5000) break;
    }
    EXPECT_EQ(d.finished.size(), 12u);
    preemptions += d.scheduler.num_preemptions_total();
    for (const auto& [name, at] : d.encoded) images += static_cast<int64_t>(at.size());
    EXPECT_EQ(d.scheduler.encoder_cache().num_freeable_slots(),
              d.scheduler.encoder_cache().cache_size());
  }
  // The random schedules did preempt and did encode.
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(images, 0);
}

}  // namespace
}  // namespace pagedllm
