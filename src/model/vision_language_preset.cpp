#include "model/vision_language_preset.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "format/dequant.h"
#include "format/tensor_writer.h"
#include "model/presets.h"
#include "multimodal/vision_gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/gguf_bpe_vocab.h"

namespace pagedllm {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

namespace {

// Qwen2-VL's special tokens from <|endoftext|> on, in the order of their ids.
constexpr const char* kSpecialTokens[] = {
    "<|endoftext|>",      "<|im_start|>",     "<|im_end|>",     "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>",    "<|box_end|>",    "<|quad_start|>",
    "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>",      "<|video_pad|>"};
constexpr int kNumSpecialTokens = 14;

// A few merges over GPT-2's byte characters ("Ġ" is the space), so that the tokenizer merges.
constexpr std::pair<const char*, const char*> kMerges[] = {
    {"Ġ", "t"}, {"h", "e"},  {"i", "n"}, {"r", "e"}, {"o", "n"}, {"Ġt", "he"},
    {"e", "r"}, {"Ġ", "a"},  {"a", "t"}, {"Ġ", "s"}, {"e", "n"}, {"Ġ", "w"},
    {"o", "r"}, {"i", "s"},  {"a", "n"}, {"e", "s"}, {"Ġ", "c"}, {"i", "t"},
    {"Ġ", "o"}, {"in", "g"}, {"e", "d"}, {"Ġ", "i"}, {"a", "r"}, {"Ġ", "b"}};

VisionEncoderConfig tiny_vision(VisionFamily family, int out_hidden_size) {
  VisionEncoderConfig v;
  v.family = family;
  v.depth = 2, v.hidden_size = 32, v.num_heads = 2, v.out_hidden_size = out_hidden_size;
  v.intermediate_size = family == VisionFamily::kQwen2VL ? 64 : 48;
  v.window_size = 56;  // Qwen2.5-VL: windows of 2 x 2 merged blocks
  v.fullatt_block_indexes = {1};
  return v;
}

VisionEncoderConfig qwen25_vl_3b_vision() {
  VisionEncoderConfig v;
  v.family = VisionFamily::kQwen25VL;
  v.depth = 32, v.hidden_size = 1280, v.num_heads = 16, v.intermediate_size = 3420;
  v.out_hidden_size = 2048, v.window_size = 112, v.fullatt_block_indexes = {7, 15, 23, 31};
  return v;
}

uint64_t name_hash(const std::string& name) {  // FNV-1a
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ULL;
  return h;
}

bool is_norm(const std::string& name) {
  return name.find("norm") != std::string::npos || name.find("ln_q") != std::string::npos;
}

// GPT-2's byte order of the first 256 ids: the printable bytes, then the others.
std::vector<int> gpt2_byte_order() {
  std::vector<int> order;
  auto printable = [](int b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  };
  for (int b = 0; b < 256; ++b) {
    if (printable(b)) order.push_back(b);
  }
  for (int b = 0; b < 256; ++b) {
    if (!printable(b)) order.push_back(b);
  }
  return order;
}

// The tokenizer's regular tokens by id: 256 byte characters, then the merges' results.
std::vector<std::string> bpe_tokens() {
  std::vector<std::string> tokens;
  for (int b : gpt2_byte_order()) tokens.push_back(byte_level_encode(std::string(1, char(b))));
  for (const auto& [a, b] : kMerges) tokens.push_back(std::string(a) + b);
  return tokens;
}

ordered_json vision_config_json(const VisionEncoderConfig& v) {
  ordered_json j;
  j["depth"] = v.depth;
  if (v.family == VisionFamily::kQwen2VL) {
    j["embed_dim"] = v.hidden_size;
    j["mlp_ratio"] = v.intermediate_size / v.hidden_size;
    j["num_heads"] = v.num_heads;
    j["hidden_size"] = v.out_hidden_size;
    j["hidden_act"] = "quick_gelu";
  } else {
    j["hidden_size"] = v.hidden_size;
    j["intermediate_size"] = v.intermediate_size;
    j["num_heads"] = v.num_heads;
    j["out_hidden_size"] = v.out_hidden_size;
    j["hidden_act"] = "silu";
    j["window_size"] = v.window_size;
    j["fullatt_block_indexes"] = v.fullatt_block_indexes;
    j["tokens_per_second"] = 2;
  }
  j["in_chans"] = v.in_channels;
  j["patch_size"] = v.patch_size;
  j["spatial_merge_size"] = v.spatial_merge_size;
  j["spatial_patch_size"] = v.patch_size;
  j["temporal_patch_size"] = v.temporal_patch_size;
  return j;
}

// config.json's fields beyond the language model's.
ordered_json config_extra(const VisionLanguagePreset& p) {
  const bool qwen25 = p.vision.family == VisionFamily::kQwen25VL;
  const VisionTokenIds ids = p.token_ids();
  ordered_json j;
  j["architectures"] = {qwen25 ? "Qwen2_5_VLForConditionalGeneration"
                               : "Qwen2VLForConditionalGeneration"};
  j["model_type"] = qwen25 ? "qwen2_5_vl" : "qwen2_vl";
  j["hidden_act"] = "silu";
  j["use_sliding_window"] = false;
  j["vision_start_token_id"] = ids.vision_start;
  j["vision_end_token_id"] = ids.vision_end;
  j["vision_token_id"] = p.first_special_id + 11;  // <|vision_pad|>
  j["image_token_id"] = ids.image_pad;
  j["video_token_id"] = ids.video_pad;
  j["vision_config"] = vision_config_json(p.vision);
  return j;
}

void write_json(const fs::path& path, const ordered_json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

ordered_json tokenizer_json(const VisionLanguagePreset& p) {
  const std::vector<std::string> tokens = bpe_tokens();
  ordered_json vocab = ordered_json::object();
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  ordered_json merges = ordered_json::array();
  for (const auto& [a, b] : kMerges) merges.push_back(std::string(a) + " " + b);
  ordered_json added = ordered_json::array();
  for (int i = 0; i < kNumSpecialTokens; ++i) {
    added.push_back({{"id", p.first_special_id + i},
                     {"content", kSpecialTokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  const ordered_json byte_level = {{"type", "ByteLevel"},
                                   {"add_prefix_space", false},
                                   {"trim_offsets", false},
                                   {"use_regex", false}};
  ordered_json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = {{"type", "NFC"}};
  const ordered_json split = {{"type", "Split"},
                              {"pattern", {{"Regex", gguf_pre_tokenizer_regexes("qwen2").at(0)}}},
                              {"behavior", "Isolated"},
                              {"invert", false}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}};
  j["post_processor"] = byte_level;
  j["decoder"] = byte_level;
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merges}};
  return j;
}

ordered_json tokenizer_config_json(const VisionLanguagePreset& p) {
  ordered_json decoder = ordered_json::object();
  for (int i = 0; i < kNumSpecialTokens; ++i) {
    decoder[std::to_string(p.first_special_id + i)] = {
        {"content", kSpecialTokens[i]}, {"lstrip", false}, {"normalized", false}, {"rstrip", false},
        {"single_word", false},         {"special", true}};
  }
  ordered_json additional = ordered_json::array();
  for (int i = 1; i < kNumSpecialTokens; ++i) additional.push_back(kSpecialTokens[i]);
  ordered_json j;
  j["add_prefix_space"] = false;
  j["added_tokens_decoder"] = decoder;
  j["additional_special_tokens"] = additional;
  j["bos_token"] = nullptr;
  j["chat_template"] = qwen2vl_chat_template();
  j["clean_up_tokenization_spaces"] = false;
  j["eos_token"] = "<|im_end|>";
  j["errors"] = "replace";
  j["model_max_length"] = p.text.max_seq_len;
  j["pad_token"] = "<|endoftext|>";
  j["split_special_tokens"] = false;
  j["tokenizer_class"] = "Qwen2Tokenizer";
  j["unk_token"] = nullptr;
  return j;
}

ordered_json preprocessor_config_json(const VisionLanguagePreset& p) {
  const Qwen2VLImageProcessorConfig& c = p.preprocessor;
  ordered_json j;
  j["min_pixels"] = c.min_pixels;
  j["max_pixels"] = c.max_pixels;
  j["patch_size"] = c.patch_size;
  j["temporal_patch_size"] = c.temporal_patch_size;
  j["merge_size"] = c.merge_size;
  j["image_mean"] = c.image_mean;
  j["image_std"] = c.image_std;
  j["image_processor_type"] = "Qwen2VLImageProcessor";
  j["processor_class"] =
      p.vision.family == VisionFamily::kQwen25VL ? "Qwen2_5_VLProcessor" : "Qwen2VLProcessor";
  return j;
}

// llama.cpp's gpt2 vocabulary keys: every id up to the model's vocabulary, the unused ones as
// "[PAD<id>]" (type 5), the special tokens as control tokens (type 3).
std::vector<GGUFMetadataEntry> gguf_tokenizer(const VisionLanguagePreset& p, int vocab_size) {
  std::vector<std::string> tokens = bpe_tokens();
  std::vector<int32_t> types(tokens.size(), 1);
  for (int i = static_cast<int>(tokens.size()); i < vocab_size; ++i) {
    const int special = i - p.first_special_id;
    const bool is_special = special >= 0 && special < kNumSpecialTokens;
    tokens.push_back(is_special ? kSpecialTokens[special] : "[PAD" + std::to_string(i) + "]");
    types.push_back(is_special ? 3 : 5);
  }
  std::vector<std::string> merges;
  for (const auto& [a, b] : kMerges) merges.push_back(std::string(a) + " " + b);
  const auto id = [](int32_t v) { return gguf_u32(static_cast<uint32_t>(v)); };
  return {{"tokenizer.ggml.model", gguf_string("gpt2")},
          {"tokenizer.ggml.pre", gguf_string("qwen2")},
          {"tokenizer.ggml.tokens", gguf_string_array(std::move(tokens))},
          {"tokenizer.ggml.token_type", gguf_i32_array(types)},
          {"tokenizer.ggml.merges", gguf_string_array(std::move(merges))},
          {"tokenizer.ggml.bos_token_id", id(p.first_special_id)},
          {"tokenizer.ggml.eos_token_id", id(p.im_end_id())},
          {"tokenizer.ggml.padding_token_id", id(p.first_special_id)},
          {"tokenizer.ggml.add_bos_token", gguf_bool(false)},
          {"tokenizer.chat_template", gguf_string(qwen2vl_chat_template())}};
}

// The values a Hugging Face file of `dtype` holds, so that the GGUF pair, which keeps vectors
// (and f32 projector matrices) in f32, holds the same weights.
void round_to(DType dtype, std::vector<float>& values) {
  for (float& v : values) {
    if (dtype == DType::kBF16) v = bf16_to_f32(f32_to_bf16(v));
    if (dtype == DType::kF16) v = f16_to_f32(f32_to_f16(v));
  }
}

void check_vocabulary(const VisionLanguagePreset& p, const ExportSpec& spec) {
  if (spec.config.vocab_size < p.first_special_id + kNumSpecialTokens) {
    throw std::invalid_argument(p.name + " needs a vocabulary of at least " +
                                std::to_string(p.first_special_id + kNumSpecialTokens) +
                                " tokens (its special tokens)");
  }
}

}  // namespace

VisionTokenIds VisionLanguagePreset::token_ids() const {
  return {first_special_id + 9, first_special_id + 10, first_special_id + 12,
          first_special_id + 13};
}

bool is_vision_language_preset(const std::string& name) {
  return name == "tiny-qwen2-vl" || name == "tiny-qwen25-vl" || name == "qwen25-vl-3b";
}

VisionLanguagePreset vision_language_preset(const std::string& name) {
  if (!is_vision_language_preset(name))
    throw std::invalid_argument("'" + name + "' is not a vision-language preset");
  VisionLanguagePreset p;
  p.name = name;
  p.text = preset_config(name);
  if (name == "qwen25-vl-3b") {
    p.vision = qwen25_vl_3b_vision();
    p.preprocessor.min_pixels = 3136, p.preprocessor.max_pixels = 12845056;
    p.first_special_id = 151643;
  } else {
    p.vision = tiny_vision(
        name == "tiny-qwen2-vl" ? VisionFamily::kQwen2VL : VisionFamily::kQwen25VL, p.text.dim);
    p.preprocessor.min_pixels = 3136, p.preprocessor.max_pixels = 28 * 28 * 128;
    p.first_special_id = 480;
  }
  return p;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> vision_tensor_shapes(
    const VisionEncoderConfig& c) {
  const int64_t d = c.hidden_size, f = c.intermediate_size;
  const int64_t merged = d * c.spatial_merge_size * c.spatial_merge_size;
  const bool layer_norm = c.family == VisionFamily::kQwen2VL;  // norms with biases
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  auto linear = [&](const std::string& name, int64_t in, int64_t o) {
    out.push_back({name + ".weight", {o, in}});
    out.push_back({name + ".bias", {o}});
  };
  auto norm = [&](const std::string& name) {
    out.push_back({name + ".weight", {d}});
    if (layer_norm) out.push_back({name + ".bias", {d}});
  };
  out.push_back({"patch_embed.proj.weight",
                 {d, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size}});
  for (int i = 0; i < c.depth; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    norm(b + "norm1");
    norm(b + "norm2");
    linear(b + "attn.qkv", d, 3 * d);
    linear(b + "attn.proj", d, d);
    if (layer_norm) {
      linear(b + "mlp.fc1", d, f);
      linear(b + "mlp.fc2", f, d);
    } else {
      linear(b + "mlp.gate_proj", d, f);
      linear(b + "mlp.up_proj", d, f);
      linear(b + "mlp.down_proj", f, d);
    }
  }
  norm("merger.ln_q");
  linear("merger.mlp.0", merged, merged);
  linear("merger.mlp.2", merged, c.out_hidden_size);
  return out;
}

VisionWeightSource random_vision_weights(uint64_t seed) {
  return [seed](const std::string& name, size_t elements) {
    std::vector<float> values(elements);
    if (is_norm(name)) {
      std::fill(values.begin(), values.end(), name.ends_with(".weight") ? 1.0f : 0.0f);
    } else {
      fill_random_normal(seed * 1000003ULL + name_hash(name), 0.02, values);
    }
    return values;
  };
}

const std::string& qwen2vl_chat_template() {
  static const std::string kTemplate =
      "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
      "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
      "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
      "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
      "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
      "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
      "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>"
      "{% elif content['type'] == 'video' or 'video' in content %}"
      "{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
      "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
      "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
      "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  return kTemplate;
}

void write_vision_language_hf_directory(const VisionLanguagePreset& preset, ExportSpec spec,
                                        uint64_t seed, const std::string& dir,
                                        const Progress& progress) {
  check_vocabulary(preset, spec);
  spec.source_rope = RopeStyle::kNeox;  // the random weights' layout, so nothing is permuted
  const DType dtype = spec.dtype;
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16)
    throw std::invalid_argument("a Hugging Face directory holds f32, f16 or bf16 weights");
  const VisionWeightSource vision = random_vision_weights(seed);
  for (const auto& [name, shape] : vision_tensor_shapes(preset.vision)) {
    spec.extra_tensors.push_back(TensorToWrite{
        "visual." + name, shape, dtype,
        [vision, name = name](std::vector<float>& v) { v = vision(name, v.size()); }});
  }
  spec.hf_config_extra = config_extra(preset).dump();
  export_hf_directory(spec, random_weights(spec.config, seed), dir, progress);
  const fs::path d(dir);
  write_json(d / "preprocessor_config.json", preprocessor_config_json(preset));
  write_json(d / "tokenizer.json", tokenizer_json(preset));
  write_json(d / "tokenizer_config.json", tokenizer_config_json(preset));
  write_json(d / "chat_template.json", {{"chat_template", qwen2vl_chat_template()}});
}

void write_vision_language_gguf(const VisionLanguagePreset& preset, ExportSpec spec, uint64_t seed,
                                const std::string& path, const std::string& mmproj_path,
                                const Progress& progress) {
  check_vocabulary(preset, spec);
  spec.source_rope = RopeStyle::kNeox;
  spec.vocab.reset();
  spec.extra_gguf_metadata = gguf_tokenizer(preset, spec.config.vocab_size);
  const DType dtype = spec.dtype;
  const WeightSource lm = random_weights(spec.config, seed);
  export_gguf(
      spec,
      [lm, dtype](WeightRole role, int layer, std::vector<float>& out) {
        lm(role, layer, out);
        round_to(dtype, out);
      },
      path, progress);
  const VisionWeightSource vision = random_vision_weights(seed);
  write_mmproj_gguf(
      mmproj_path, preset.vision,
      [vision, dtype](const std::string& name, size_t elements) {
        std::vector<float> values = vision(name, elements);
        round_to(dtype, values);
        return values;
      },
      dtype == DType::kF16 || dtype == DType::kBF16 || dtype == DType::kQ8_0 ? dtype : DType::kF32,
      preset.preprocessor);
}

}  // namespace pagedllm
