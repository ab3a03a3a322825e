// Images end to end through the public Engine on the tiny Qwen2-VL and Qwen2.5-VL presets:
// greedy tokens and logprobs against a numpy + PIL transcription of HF's processor, vision tower
// and language model (tests/reference/qwen2vl_generate_reference.py); the same tokens from the
// GGUF + mmproj pair; and the same tokens whatever the chunk size, batch, preemption or prefix
// cache (the data path's exactness).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "model/vision_language_preset.h"
#include "multimodal/reference.h"
#include "pagedllm/engine.h"
#include "sanitizer_build.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using nlohmann::json;

// The preset written once per process as an HF directory (DIR) and a GGUF pair (DIR.gguf,
// DIR-mmproj.gguf).
std::string model_dir(const std::string& preset_name) {
  static std::map<std::string, std::string> done;
  if (auto it = done.find(preset_name); it != done.end()) return it->second;
  const VisionLanguagePreset preset = vision_language_preset(preset_name);
  ExportSpec spec;
  spec.config = preset.text;
  spec.dtype = DType::kF32;
  const std::string dir = test::temp_path("engine-" + preset_name);
  write_vision_language_hf_directory(preset, spec, 21, dir);
  write_vision_language_gguf(preset, spec, 21, dir + ".gguf", dir + "-mmproj.gguf");
  return done[preset_name] = dir;
}

// A PNG of random pixels written by PIL (so that decoding is part of what is compared).
std::string png(int width, int height, int seed) {
  const std::string path =
      test::temp_path("img-" + std::to_string(width) + "x" + std::to_string(height) + "-" +
                      std::to_string(seed) + ".png");
  const std::string cmd =
      "/usr/bin/python3 -c \"import numpy as np; from PIL import Image; "
      "r = np.random.RandomState(" +
      std::to_string(seed) + "); Image.fromarray(r.randint(0, 256, (" + std::to_string(height) +
      ", " + std::to_string(width) + ", 3), dtype=np.uint8)).save('" + path + "')\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return path;
}

std::unique_ptr<Engine> open(const std::string& model, EngineOptions o = {}) {
  o.model = model;
  o.threads = 2;
  o.kv_cache_memory_gib = 0.05;
  return std::make_unique<Engine>(o);
}

std::vector<int32_t> chat_prompt(const Engine& engine, int images, const std::string& question) {
  std::string text = "<|im_start|>user\n";
  for (int i = 0; i < images; ++i) text += "<|vision_start|><|image_pad|><|vision_end|>";
  text += question + "<|im_end|>\n<|im_start|>assistant\n";
  return engine.encode(text, false);
}

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  p.logprobs = 0;
  return p;
}

std::vector<ImageInput> prepare(const Engine& engine, const std::vector<std::string>& paths) {
  std::vector<ImageInput> images;
  for (const std::string& path : paths)
    images.push_back(engine.prepare_image(test::read_bytes(path)));
  return images;
}

RequestOutput run_one(Engine& engine, std::vector<int32_t> ids, std::vector<ImageInput> images,
                      const SamplingParams& p) {
  const std::string id = engine.add_request(std::move(ids), std::move(images), p);
  RequestOutput last;
  while (engine.has_unfinished_requests())
    for (auto& out : engine.step())
      if (out.request_id == id) last = out;
  return last;
}

json reference(const std::string& model, const std::vector<std::string>& images,
               const std::vector<int32_t>& ids, int max_tokens) {
  return test::generate_reference(json{
      {"model", model},
      {"images", images},
      {"input_ids", ids},
      {"max_tokens", max_tokens}}.dump());
}

class ImagesEndToEnd : public testing::TestWithParam<const char*> {};

TEST_P(ImagesEndToEnd, GreedyTokensAndLogprobsEqualANumpyTranscriptionOfHf) {
  const std::string dir = model_dir(GetParam());
  auto engine = open(dir);
  ASSERT_TRUE(engine->supports_images());
  // Two images of other sizes and aspect ratios.
  const std::vector<std::string> paths = {png(70, 100, 3), png(120, 60, 4)};
  const std::vector<int32_t> ids = chat_prompt(*engine, 2, "What differs?");
  const RequestOutput out = run_one(*engine, ids, prepare(*engine, paths), greedy(8));
  const json ref = reference(dir, paths, ids, 8);
  EXPECT_EQ(out.prompt_token_ids, ref["prompt_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(out.token_ids, ref["tokens"].get<std::vector<int32_t>>());
  ASSERT_EQ(out.logprobs.size(), 8u);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(out.logprobs[i].logprob, ref["logprobs"][i].get<double>(), 2e-3) << i;
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.num_encoded_images, 2);
  const int32_t pad = vision_language_preset(GetParam()).token_ids().image_pad;
  EXPECT_EQ(stats.num_encoded_image_tokens,
            std::count(out.prompt_token_ids.begin(), out.prompt_token_ids.end(), pad));
  EXPECT_GT(stats.encoder_seconds, 0.0);
}

TEST_P(ImagesEndToEnd, TheGgufAndMmprojPairGivesTheHfDirectorysTokens) {
  const std::string dir = model_dir(GetParam());
  const std::vector<std::string> paths = {png(70, 100, 3)};
  auto hf = open(dir);
  EngineOptions o;
  o.mmproj = dir + "-mmproj.gguf";
  auto gguf = open(dir + ".gguf", o);
  ASSERT_TRUE(gguf->supports_images());
  const std::vector<int32_t> ids = chat_prompt(*hf, 1, "Describe it.");
  EXPECT_EQ(chat_prompt(*gguf, 1, "Describe it."), ids);
  const RequestOutput a = run_one(*hf, ids, prepare(*hf, paths), greedy(6));
  const RequestOutput b = run_one(*gguf, ids, prepare(*gguf, paths), greedy(6));
  EXPECT_EQ(a.token_ids, b.token_ids);
  for (size_t i = 0; i < a.logprobs.size(); ++i)
    EXPECT_NEAR(a.logprobs[i].logprob, b.logprobs[i].logprob, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Presets, ImagesEndToEnd,
                         testing::Values("tiny-qwen2-vl", "tiny-qwen25-vl"));

// Several image requests (one image shared) and text requests, run together under a setting;
// returns each request's tokens.
std::vector<std::vector<int32_t>> run_mix(const EngineOptions& o) {
  const std::string dir = model_dir("tiny-qwen25-vl");
  auto engine = open(dir, o);
  const std::vector<std::vector<std::string>> images = {
      {png(70, 100, 3)}, {}, {png(120, 60, 4), png(70, 100, 3)}, {png(56, 56, 5)}, {}};
  std::vector<std::string> ids;
  for (size_t i = 0; i < images.size(); ++i) {
    const auto prompt = chat_prompt(*engine, static_cast<int>(images[i].size()),
                                    "Question " + std::to_string(i) + " about the picture?");
    ids.push_back(engine->add_request(prompt, prepare(*engine, images[i]), greedy(6)));
  }
  std::map<std::string, std::vector<int32_t>> tokens;
  while (engine->has_unfinished_requests())
    for (auto& out : engine->step()) tokens[out.request_id] = out.token_ids;
  std::vector<std::vector<int32_t>> result;
  for (const auto& id : ids) result.push_back(tokens[id]);
  return result;
}

TEST(ImagesExactness, ChunkSizesBatchesPreemptionAndThePrefixCacheGiveTheSameTokens) {
  EngineOptions alone;
  alone.max_num_seqs = 1;
  alone.enable_prefix_caching = false;
  const auto expected = run_mix(alone);
#ifdef PAGEDLLM_TEST_ASAN
  const std::vector<int> chunks = {7};  // the sanitizer run checks memory, not every schedule
#else
  const std::vector<int> chunks = {2, 7, 40};
#endif
  for (int chunk : chunks) {  // chunk 1 and every offset: EncoderRunner.*
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    EngineOptions o;
    o.max_num_batched_tokens = chunk;
    o.max_num_seqs = std::min(chunk, 4);
    EXPECT_EQ(run_mix(o), expected);
  }
  EngineOptions tight;  // a pool too small for all five at once: preemption
  tight.num_blocks = 9;
  tight.block_size = 8;
  tight.max_num_batched_tokens = 24;
  tight.max_num_seqs = 4;
  EXPECT_EQ(run_mix(tight), expected);
  EngineOptions short_encoder;  // one image's worth of encoder work per step
  short_encoder.max_num_encoder_input_tokens = 12;
  short_encoder.encoder_cache_size = 24;
  EXPECT_EQ(run_mix(short_encoder), expected);
}

TEST(ImagesExactness, TheSameImageTwiceIsEncodedOnceAndItsBlocksAreReused) {
  auto engine = open(model_dir("tiny-qwen2-vl"));
  const std::vector<std::string> paths = {png(70, 100, 3)};
  const auto ids = chat_prompt(*engine, 1, "Describe this picture in detail, please.");
  const RequestOutput a = run_one(*engine, ids, prepare(*engine, paths), greedy(4));
  const EngineStats after_first = engine->stats();
  const RequestOutput b = run_one(*engine, ids, prepare(*engine, paths), greedy(4));
  EXPECT_EQ(a.token_ids, b.token_ids);
  const EngineStats after_second = engine->stats();
  EXPECT_EQ(after_second.num_encoded_images, 1);
  EXPECT_GT(after_second.prefix_cache_hits, after_first.prefix_cache_hits);
  // Another image after the same text shares only the blocks before it.
  const RequestOutput c = run_one(*engine, ids, prepare(*engine, {png(70, 100, 9)}), greedy(4));
  EXPECT_EQ(engine->stats().num_encoded_images, 2);
  ASSERT_EQ(c.logprobs.size(), a.logprobs.size());
  EXPECT_NE(c.logprobs[0].logprob, a.logprobs[0].logprob);  // the image does reach the model
}

TEST(ImagesErrors, BadRequestsAreRefusedWithTheReason) {
  auto engine = open(model_dir("tiny-qwen2-vl"));
  const auto image = prepare(*engine, {png(70, 100, 3)});
  const auto expect_error = [](auto&& f, const std::string& fragment) {
    try {
      f();
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error([&] { engine->add_request(chat_prompt(*engine, 0, "x"), image, greedy(2)); },
               "image placeholders");
  expect_error([&] { engine->add_request(chat_prompt(*engine, 2, "x"), image, greedy(2)); },
               "image placeholders");
  const std::vector<uint8_t> junk = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0};
  expect_error([&] { engine->prepare_image(junk); }, "PNG");
  expect_error([&] { engine->prepare_image(std::vector<uint8_t>{1, 2, 3}); }, "unsupported");
  EngineOptions small;
  small.max_num_encoder_input_tokens = 4;
  small.max_num_batched_tokens = 64;
  small.max_num_seqs = 4;
  auto limited = open(model_dir("tiny-qwen2-vl"), small);
  expect_error([&] { limited->add_request(chat_prompt(*limited, 1, "x"), image, greedy(2)); },
               "exceeds the encoder budget");
  auto text_only = open(test::model_path("stories260K/stories260K.gguf"));
  EXPECT_FALSE(text_only->supports_images());
  expect_error([&] { text_only->prepare_image(test::read_bytes(png(70, 100, 3))); },
               "takes no images");
}

}  // namespace
}  // namespace pagedllm
