// make-model's Qwen2-VL-family presets: the HF directory holds what each reader needs (config,
// vision tower, preprocessor, tokenizer, chat template), and the GGUF pair holds the same
// tokenizer and vision tower.
#include "model/vision_language_preset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "format/gguf_file.h"
#include "format/safetensors_file.h"
#include "loader/load_model.h"
#include "model/presets.h"
#include "multimodal/vision_gguf.h"
#include "test_paths.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm {
namespace {

using nlohmann::json;

struct Written {
  VisionLanguagePreset preset;
  std::string dir, gguf, mmproj;
};

Written write(const std::string& name, DType dtype = DType::kF32) {
  const std::string base = test::temp_path("preset-" + name + to_string(dtype));
  Written w{vision_language_preset(name), base, base + ".gguf", base + "-mmproj.gguf"};
  ExportSpec spec;
  spec.config = w.preset.text;
  spec.dtype = dtype;
  write_vision_language_hf_directory(w.preset, spec, 4, w.dir);
  write_vision_language_gguf(w.preset, spec, 4, w.gguf, w.mmproj);
  return w;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST(VisionLanguagePreset, ConfigJsonIsTheFamilysWithItsTokenIds) {
  const Written w = write("tiny-qwen25-vl");
  for (const char* file : {"config.json", "model.safetensors", "preprocessor_config.json",
                           "tokenizer.json", "tokenizer_config.json", "chat_template.json"}) {
    EXPECT_TRUE(std::filesystem::exists(w.dir + "/" + file)) << file;
  }
  const json config = read_json(w.dir + "/config.json");
  EXPECT_EQ(config["architectures"][0], "Qwen2_5_VLForConditionalGeneration");
  EXPECT_EQ(config["model_type"], "qwen2_5_vl");
  EXPECT_EQ(config["image_token_id"], 492);
  EXPECT_EQ(config["eos_token_id"], 482);
  const MropeConfig mrope = MropeConfig::from_hf_config(config);
  EXPECT_EQ(mrope.variant, MropeVariant::kQwen25VL);
  EXPECT_EQ(mrope.ids.vision_start, 489);
  EXPECT_EQ(mrope.ids.vision_end, 490);
  EXPECT_EQ(mrope.ids.image_pad, 492);
  EXPECT_EQ(mrope.ids.video_pad, 493);
  EXPECT_EQ(mrope.mrope_section, (std::vector<int>{2, 3, 3}));
  const VisionEncoderConfig vision = VisionEncoderConfig::from_hf_config(config);
  EXPECT_EQ(vision.family, VisionFamily::kQwen25VL);
  EXPECT_EQ(vision.depth, 2);
  EXPECT_EQ(vision.hidden_size, 32);
  EXPECT_EQ(vision.out_hidden_size, 64);
  EXPECT_EQ(vision.window_size, 56);
  EXPECT_EQ(vision.fullatt_block_indexes, (std::vector<int>{1}));
  const auto pre = Qwen2VLImageProcessorConfig::from_file(w.dir);
  EXPECT_EQ(pre.max_pixels, 28 * 28 * 128);
  EXPECT_EQ(pre.min_pixels, 3136);

  const ModelWeights lm = load_model(w.dir);
  EXPECT_EQ(lm.config.architecture, "qwen2vl");
  EXPECT_EQ(lm.config.mrope_section, (std::vector<int>{2, 3, 3}));
  EXPECT_TRUE(lm.config.qkv_bias);
  EXPECT_TRUE(lm.config.tied_embeddings);
  EXPECT_FALSE(load_model(write("tiny-qwen2-vl").dir).config.tied_embeddings);
}

TEST(VisionLanguagePreset, ChatTemplateAndTokenizerGiveTheImagePlaceholderIds) {
  const Written w = write("tiny-qwen2-vl");
  const auto hf = load_tokenizer_file(w.dir);
  const auto gguf = load_tokenizer_file(w.gguf);
  ASSERT_EQ(hf->chat_template(), qwen2vl_chat_template());
  EXPECT_EQ(gguf->chat_template(), qwen2vl_chat_template());
  EXPECT_EQ(read_json(w.dir + "/chat_template.json")["chat_template"], qwen2vl_chat_template());

  ChatTemplateInputs inputs;
  inputs.messages = json::parse(R"([{"role": "user", "content": [
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
      {"type": "text", "text": "What is in the image?"}]}])");
  inputs.add_generation_prompt = true;
  const std::string prompt = ChatTemplate(hf->chat_template()).render(inputs);
  EXPECT_EQ(prompt,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
            "<|vision_start|><|image_pad|><|vision_end|>What is in the image?<|im_end|>\n"
            "<|im_start|>assistant\n");
  const std::vector<int32_t> ids = hf->encode(prompt, true);
  EXPECT_EQ(ids, gguf->encode(prompt, true));
  EXPECT_EQ(ids.front(), 481);  // <|im_start|>, no BOS
  const std::vector<int32_t> image = {489, 492, 490};
  EXPECT_NE(std::search(ids.begin(), ids.end(), image.begin(), image.end()), ids.end());
  EXPECT_EQ(hf->eos_id(), 482);
  EXPECT_EQ(gguf->eos_id(), 482);
  // Byte-level BPE with merges: " the" is one token, and text round-trips.
  const std::vector<int32_t> the = hf->encode(" the", false);
  EXPECT_EQ(the.size(), 1u);
  EXPECT_GE(the[0], 256);
  EXPECT_EQ(hf->decode(hf->encode("Ünïcode and the cat, 42!", false)), "Ünïcode and the cat, 42!");
}

TEST(VisionLanguagePreset, SafetensorsAndMmprojHoldTheSameVisionTower) {
  // bf16: the mmproj keeps f32, holding the values the bf16 checkpoint rounds to.
  for (const auto& [name, dtype] :
       {std::pair{"tiny-qwen2-vl", DType::kF32}, std::pair{"tiny-qwen25-vl", DType::kF32},
        std::pair{"tiny-qwen25-vl", DType::kBF16}}) {
    const Written w = write(name, dtype);
    const VisionEncoderConfig config =
        VisionEncoderConfig::from_hf_config(read_json(w.dir + "/config.json"));
    SafetensorsFile file(w.dir + "/model.safetensors");
    const VisionEncoder from_hf(config, safetensors_vision_weights(file, "visual."));
    GGUFFile mmproj(w.mmproj);
    const VisionEncoder from_gguf(vision_config_from_mmproj(mmproj), mmproj_vision_weights(mmproj));
    const GridTHW grid{1, 4, 6};
    std::vector<float> pixels(static_cast<size_t>(grid.num_patches() * config.patch_dim()));
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::sin(i * 0.013f);
    const std::vector<float> rows = from_hf.encode(pixels, std::span(&grid, 1));
    EXPECT_EQ(rows.size(), 6u * 64u) << name;
    EXPECT_EQ(from_gguf.encode(pixels, std::span(&grid, 1)), rows) << name;
    // Random, not zeros: std 0.02 weights give rows of a nonzero spread.
    double sum2 = 0;
    for (float v : rows) sum2 += double(v) * v;
    EXPECT_GT(sum2, 0.0) << name;
  }
}

TEST(VisionLanguagePreset, Qwen25Vl3bHasTheRealShapes) {
  const VisionLanguagePreset p = vision_language_preset("qwen25-vl-3b");
  EXPECT_EQ(p.text.dim, 2048);
  EXPECT_EQ(p.text.n_layers, 36);
  EXPECT_EQ(p.text.n_heads, 16);
  EXPECT_EQ(p.text.n_kv_heads, 2);
  EXPECT_EQ(p.text.head_dim, 128);
  EXPECT_EQ(p.text.hidden_dim, 11008);
  EXPECT_EQ(p.text.vocab_size, 151936);
  EXPECT_EQ(p.text.mrope_section, (std::vector<int>{16, 24, 24}));
  EXPECT_TRUE(p.text.tied_embeddings);
  EXPECT_NO_THROW(p.text.validate("qwen25-vl-3b"));
  EXPECT_EQ(p.vision.depth, 32);
  EXPECT_EQ(p.vision.hidden_size, 1280);
  EXPECT_EQ(p.vision.intermediate_size, 3420);
  EXPECT_EQ(p.vision.out_hidden_size, 2048);
  EXPECT_EQ(p.vision.fullatt_block_indexes, (std::vector<int>{7, 15, 23, 31}));
  const VisionTokenIds ids = p.token_ids();
  EXPECT_EQ(ids.vision_start, 151652);
  EXPECT_EQ(ids.vision_end, 151653);
  EXPECT_EQ(ids.image_pad, 151655);
  EXPECT_EQ(ids.video_pad, 151656);
  EXPECT_THROW(vision_language_preset("tiny-qwen2"), std::invalid_argument);
}

}  // namespace
}  // namespace pagedllm
