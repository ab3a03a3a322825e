// The Qwen2-VL / Qwen2.5-VL language model: logits against a numpy transcription of HF's text
// model (tests/reference/qwen2vl_lm_reference.py) on a prompt with image rows given as
// embeddings and M-RoPE positions from get_rope_index, in two steps that split the image;
// text-only steps without 3-row positions; and make-model's HF directory, its GGUF + mmproj
// pair and newer transformers' naming loading to identical logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "format/dequant.h"
#include "format/safetensors_file.h"
#include "format/tensor_writer.h"
#include "loader/load_model.h"
#include "model/llama_model.h"
#include "model/perturbed_weights.h"
#include "model/presets.h"
#include "model/vision_language_preset.h"
#include "multimodal/mrope.h"
#include "test_paths.h"
#include "worker/model_runner.h"

namespace pagedllm {
namespace {

using nlohmann::json;

// text, <|vision_start|>, 12 pads of a 6 x 8 patch grid (3 x 4 merged), <|vision_end|>, text.
struct ImagePrompt {
  std::vector<int32_t> tokens;
  MropePositions positions;
  std::vector<int32_t> image_rows;
  std::vector<float> image_values;  // [rows, dim]
};

ImagePrompt image_prompt(const VisionLanguagePreset& preset) {
  const VisionTokenIds ids = preset.token_ids();
  ImagePrompt p;
  p.tokens = {preset.im_start_id(), 117, 30, 200, ids.vision_start};
  const GridTHW grid{1, 6, 8};
  for (int i = 0; i < 12; ++i) p.tokens.push_back(ids.image_pad);
  for (int32_t t : {ids.vision_end, 72, 101, 9, preset.im_end_id()}) p.tokens.push_back(t);
  MropeConfig config;
  config.ids = ids;
  config.mrope_section = preset.text.mrope_section;
  p.positions = mrope_positions(p.tokens, config, {.image_grids = std::span(&grid, 1)});
  const int dim = preset.text.dim;
  for (int i = 0; i < 12; ++i) {
    p.image_rows.push_back(5 + i);
    for (int d = 0; d < dim; ++d)
      p.image_values.push_back(0.3f * static_cast<float>(std::sin(1.3 * i + 0.7 * d)));
  }
  return p;
}

// The prompt through the model in steps of `chunks` tokens (one prefill when empty), with
// logits at every token; mrope_positions when `mrope`, the image rows when `image_rows`.
std::vector<float> forward_all_rows(std::shared_ptr<const ModelWeights> weights,
                                    const ImagePrompt& p, bool mrope, bool image_rows = true,
                                    std::vector<int> chunks = {}) {
  const int n = static_cast<int>(p.tokens.size());
  if (chunks.empty()) chunks = {n};
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.cache.num_blocks = 16;
  cfg.scheduler.max_model_len = 64;
  cfg.scheduler.max_num_batched_tokens = 64;
  cfg.scheduler.max_num_seqs = 2;
  LlamaModel model(weights, 64);
  PagedKVCache cache(LlamaModel::kv_cache_spec(weights->config, 16, 4));
  model.bind_kv_cache(cache);
  ModelRunner runner(cfg);
  std::vector<float> logits;
  int begin = 0;
  for (const int count : chunks) {
    SchedulerOutput out;
    if (begin == 0) {
      out.scheduled_new_reqs.push_back(
          {"r", p.tokens, SamplingParams{}, {1, 2, 3, 4, 5, 6}, 0, std::nullopt, {}});
    } else {
      out.scheduled_cached_reqs.push_back({"r", {}, begin, false, {}});
    }
    out.num_scheduled_tokens.push_back({"r", count});
    out.total_num_scheduled_tokens = count;
    runner.update_states(out);
    ModelInputs in = runner.prepare_inputs();
    for (int t = 0; t < count; ++t) in.logits_indices[static_cast<size_t>(t)] = t;
    in.num_logits = count;
    in.logits_start_loc[1] = count;
    in.mrope_positions.clear();
    if (mrope) {
      in.mrope_stride = 64;
      in.mrope_positions.assign(3 * 64, 0);
      for (int r = 0; r < 3; ++r) {
        for (int t = 0; t < count; ++t)
          in.mrope_positions[size_t(r * 64 + t)] = p.positions.at(r, begin + t);
      }
    }
    // The image rows of this step, as indices into its tokens.
    std::vector<int32_t> rows;
    std::vector<float> values;
    const size_t dim = static_cast<size_t>(weights->config.dim);
    for (size_t i = 0; i < p.image_rows.size() && image_rows; ++i) {
      const int32_t row = p.image_rows[i] - begin;
      if (row < 0 || row >= count) continue;
      rows.push_back(row);
      values.insert(values.end(), p.image_values.begin() + long(i * dim),
                    p.image_values.begin() + long((i + 1) * dim));
    }
    in.embed_rows = rows;
    in.embed_values = values;
    std::vector<float> step(static_cast<size_t>(count * weights->config.vocab_size));
    model.forward(in, step);
    logits.insert(logits.end(), step.begin(), step.end());
    begin += count;
  }
  return logits;
}

std::shared_ptr<const ModelWeights> load(const std::string& path) {
  return std::make_shared<const ModelWeights>(load_model(path));
}

json numpy_logits(const std::string& model, const ImagePrompt& p) {
  const int n = static_cast<int>(p.tokens.size());
  json rows = json::array(), positions = json::array();
  const size_t dim = p.image_values.size() / p.image_rows.size();
  for (size_t i = 0; i < p.image_rows.size(); ++i) {
    rows.push_back(std::vector<float>(p.image_values.begin() + long(i * dim),
                                      p.image_values.begin() + long((i + 1) * dim)));
  }
  for (int r = 0; r < 3; ++r) {
    std::vector<int32_t> row;
    for (int t = 0; t < n; ++t) row.push_back(p.positions.at(r, t));
    positions.push_back(row);
  }
  const json request = {{"model", model},
                        {"input_ids", p.tokens},
                        {"positions", positions},
                        {"embed_rows", p.image_rows},
                        {"embed_values", rows}};
  const std::string input = test::temp_path("qwen2vl-lm-request.json");
  std::ofstream(input) << request.dump();
  const std::string cmd =
      "/usr/bin/python3 " PAGEDLLM_SOURCE_DIR "/tests/reference/qwen2vl_lm_reference.py < " + input;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, got);
  EXPECT_EQ(pclose(pipe), 0) << "reference failed: " << cmd;
  return json::parse(text);
}

class Qwen2VLReference : public ::testing::TestWithParam<const char*> {};

TEST_P(Qwen2VLReference, LogitsOfEveryTokenEqualHfForwardWithImageRowsAndMropePositions) {
  const VisionLanguagePreset preset = vision_language_preset(GetParam());
  ExportSpec spec;
  spec.config = preset.text;
  spec.source_rope = RopeStyle::kNeox;
  const std::string dir = test::temp_path(std::string("lm-ref-") + GetParam());
  export_hf_directory(spec, test::perturbed_weights(spec.config, 5), dir);
  const ImagePrompt p = image_prompt(preset);
  // The image's rows run behind the token indices: M-RoPE really differs from 1-D here.
  ASSERT_NE(p.positions.at(1, 9), p.positions.at(2, 9));
  ASSERT_LT(p.positions.delta, 0);

  // Two steps, the image split between them: its rows in the second step are indices into that
  // step's tokens, and the first step's keys come back from the cache.
  const std::vector<float> got = forward_all_rows(load(dir), p, true, true, {10, 12});
  const json ref = numpy_logits(dir, p);
  ASSERT_EQ(ref.size(), p.tokens.size());
  const size_t vocab = static_cast<size_t>(preset.text.vocab_size);
  double max_abs = 1.0, max_diff = 0.0;
  for (size_t t = 0; t < ref.size(); ++t) {
    ASSERT_EQ(ref[t].size(), vocab);
    for (size_t v = 0; v < vocab; ++v) {
      const double r = ref[t][v].get<double>();
      max_abs = std::max(max_abs, std::fabs(r));
      max_diff = std::max(max_diff, std::fabs(r - got[t * vocab + v]));
    }
  }
  EXPECT_LE(max_diff, 1e-5 * max_abs) << "max |diff| " << max_diff;
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, Qwen2VLReference,
                         ::testing::Values("tiny-qwen2-vl", "tiny-qwen25-vl"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

TEST(Qwen2VLLanguageModel, TextStepsWithoutMropePositionsEqualThreeEqualRows) {
  const VisionLanguagePreset preset = vision_language_preset("tiny-qwen2-vl");
  const std::string dir = test::temp_path("lm-text-only");
  ExportSpec spec;
  spec.config = preset.text;
  spec.source_rope = RopeStyle::kNeox;
  export_hf_directory(spec, test::perturbed_weights(spec.config, 5), dir);
  const auto weights = load(dir);
  ImagePrompt p = image_prompt(preset);
  const std::vector<float> image = forward_all_rows(weights, p, true);
  // Text only: every row is the sequence position, so no 3-row positions are needed.
  for (int r = 0; r < 3; ++r) {
    for (int64_t t = 0; t < p.positions.num_tokens; ++t)
      p.positions.positions[static_cast<size_t>(r * p.positions.num_tokens + t)] =
          static_cast<int32_t>(t);
  }
  EXPECT_EQ(forward_all_rows(weights, p, true, false), forward_all_rows(weights, p, false, false));
  // and the image's positions do change the answer.
  EXPECT_NE(forward_all_rows(weights, p, true, true), image);
}

// Copies DIR with newer transformers' layout: model.language_model.* and model.visual.*
// tensors, the text fields under text_config.
void write_new_transformers_layout(const std::string& dir, const std::string& out) {
  std::filesystem::create_directories(out);
  SafetensorsFile file(dir + "/model.safetensors");
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, t] : file.tensors()) {
    std::string renamed = name.starts_with("model.")    ? "model.language_model." + name.substr(6)
                          : name.starts_with("visual.") ? "model." + name
                                                        : name;
    const SafetensorsTensor* src = &t;
    const DType dtype = *dtype_of_safetensors(t.dtype);
    tensors.push_back({renamed, t.shape, dtype, [src, dtype](std::vector<float>& v) {
                         dequantize_row(dtype, src->data, v.data(), int64_t(v.size()));
                       }});
  }
  write_safetensors(out + "/model.safetensors", tensors);
  std::ifstream in(dir + "/config.json");
  const json config = json::parse(in);
  json moved = {{"architectures", config["architectures"]},
                {"model_type", config["model_type"]},
                {"vision_config", config["vision_config"]},
                {"text_config", json::object()}};
  for (const auto& [key, value] : config.items()) {
    if (!moved.contains(key)) moved["text_config"][key] = value;
  }
  moved["text_config"]["rope_scaling"] = {
      {"rope_type", "default"}, {"mrope_section", config["rope_scaling"]["mrope_section"]}};
  std::ofstream(out + "/config.json") << moved.dump(2);
}

TEST(Qwen2VLLanguageModel, HfDirectoryGgufAndNewTransformersLayoutGiveIdenticalLogits) {
  for (const char* name : {"tiny-qwen2-vl", "tiny-qwen25-vl"}) {
    for (const DType dtype : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(std::string(name) + " " + to_string(dtype));
      const VisionLanguagePreset preset = vision_language_preset(name);
      ExportSpec spec;
      spec.config = preset.text;
      spec.dtype = dtype;
      const std::string base = test::temp_path(std::string("vl-") + name + to_string(dtype));
      const std::string gguf = base + ".gguf";
      write_vision_language_hf_directory(preset, spec, 9, base + "-hf");
      write_vision_language_gguf(preset, spec, 9, gguf, base + "-mmproj.gguf");
      write_new_transformers_layout(base + "-hf", base + "-new");
      const ImagePrompt p = image_prompt(preset);
      const std::vector<float> hf = forward_all_rows(load(base + "-hf"), p, true);
      EXPECT_EQ(forward_all_rows(load(gguf), p, true), hf);
      EXPECT_EQ(forward_all_rows(load(base + "-new"), p, true), hf);
      const auto weights = load(gguf);
      EXPECT_EQ(weights->config.mrope_section, preset.text.mrope_section);
      EXPECT_EQ(weights->config.tied_embeddings, preset.text.tied_embeddings);
    }
  }
}

void expect_load_error(const std::string& path, const std::string& fragment) {
  try {
    load_model(path);
    ADD_FAILURE() << path << " loaded";
  } catch (const ModelLoadError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Qwen2VLLanguageModel, BadOrMissingMropeSectionsAreRefusedInOneLine) {
  const VisionLanguagePreset preset = vision_language_preset("tiny-qwen2-vl");
  ExportSpec spec;
  spec.config = preset.text;
  const std::string dir = test::temp_path("vl-bad-mrope");
  export_hf_directory(spec, random_weights(spec.config, 1), dir);
  std::ifstream in(dir + "/config.json");
  json config = json::parse(in);
  in.close();
  auto write = [&](const json& c) { std::ofstream(dir + "/config.json") << c.dump(); };
  config["rope_scaling"]["mrope_section"] = {2, 3, 4};  // sums to 9, head_dim / 2 is 8
  write(config);
  expect_load_error(dir, "mrope_section [2, 3, 4] must be 3 sizes summing to head_dim / 2 (8)");
  config["rope_scaling"]["mrope_section"] = {4, 4};
  write(config);
  expect_load_error(dir, "mrope_section [4, 4]");
  config["rope_scaling"]["mrope_section"] = "2,3,3";
  write(config);
  expect_load_error(dir, "mrope_section");
  config.erase("rope_scaling");
  write(config);
  expect_load_error(dir, "needs rope_scaling.mrope_section");

  spec.config.mrope_section = {3, 3, 3};  // the exporter writes what it is given
  const std::string gguf = test::temp_path("vl-bad-mrope.gguf");
  export_gguf(spec, random_weights(spec.config, 1), gguf);
  expect_load_error(gguf, "mrope_section [3, 3, 3]");
}

}  // namespace
}  // namespace pagedllm
