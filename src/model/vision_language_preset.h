// make-model's Qwen2-VL-family presets as whole models a user could load: the language model of
// presets.h, a vision tower of random weights, a byte-level BPE tokenizer with Qwen2-VL's special
// tokens, Qwen2-VL's chat template and the image preprocessor's settings. Written as a Hugging
// Face directory (as the Hub repos ship them) or as llama.cpp's pair of GGUF files (the
// language model, arch qwen2vl, and the mmproj projector); the same seed gives the same weights
// in both.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loader/model_export.h"
#include "multimodal/mrope.h"
#include "multimodal/qwen2vl_image_processor.h"
#include "multimodal/vision_encoder.h"

namespace pagedllm {

struct VisionLanguagePreset {
  std::string name;
  ModelConfig text;  // preset_config(name)
  VisionEncoderConfig vision;
  Qwen2VLImageProcessorConfig preprocessor;
  // <|endoftext|>; Qwen2-VL's other 13 special tokens follow it in Qwen2-VL's order
  // (<|im_start|> +1, <|im_end|> +2, <|vision_start|> +9, <|vision_end|> +10, <|image_pad|>
  // +12, <|video_pad|> +13), as 151643... in the real vocabulary.
  int32_t first_special_id = 0;

  VisionTokenIds token_ids() const;
  int32_t im_start_id() const { return first_special_id + 1; }
  int32_t im_end_id() const { return first_special_id + 2; }
};

// tiny-qwen2-vl, tiny-qwen25-vl, qwen25-vl-3b.
bool is_vision_language_preset(const std::string& name);
// Throws std::invalid_argument for another name.
VisionLanguagePreset vision_language_preset(const std::string& name);

// Every vision tensor's HF name (without "visual.") and shape, the Conv3d as [out, c, t, p, p].
std::vector<std::pair<std::string, std::vector<int64_t>>> vision_tensor_shapes(
    const VisionEncoderConfig& config);
// HF-named random vision weights: N(0, 0.02) drawn from (seed, name); norm weights 1, norm
// biases 0.
VisionWeightSource random_vision_weights(uint64_t seed);

// Qwen2-VL's chat template, as Qwen2-VL-2B-Instruct's chat_template.json has it: image parts
// ({"type": "image"}, "image" or "image_url") render as
// <|vision_start|><|image_pad|><|vision_end|>.
const std::string& qwen2vl_chat_template();

// DIR: config.json (the family's, with vision_config and the token ids), model.safetensors (the
// language model and visual.*), preprocessor_config.json, tokenizer.json, tokenizer_config.json
// (with the chat template) and chat_template.json. spec.config is the language model's
// (preset.text, maybe with a larger vocabulary); spec.dtype F32, F16 or BF16.
void write_vision_language_hf_directory(const VisionLanguagePreset& preset, ExportSpec spec,
                                        uint64_t seed, const std::string& dir,
                                        const Progress& progress = {});
// The language model as a qwen2vl GGUF at `path` (tokenizer and chat template embedded) and the
// vision tower as an mmproj GGUF at `mmproj_path` (matrices as spec.dtype when it is F16, BF16
// or Q8_0, else f32). Every value is rounded as the HF directory of spec.dtype stores it (bf16
// biases, say), so that the two hold the same weights.
void write_vision_language_gguf(const VisionLanguagePreset& preset, ExportSpec spec, uint64_t seed,
                                const std::string& path, const std::string& mmproj_path,
                                const Progress& progress = {});

}  // namespace pagedllm
