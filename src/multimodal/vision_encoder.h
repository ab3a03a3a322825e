// The vision encoders of Qwen2-VL and Qwen2.5-VL (HF's Qwen2VisionTransformerPretrainedModel and
// Qwen2_5_VisionTransformerPretrainedModel), on f32 weights with HF's names: patch embedding (the
// Conv3d as one matrix product over the flattened patches), 2-D rotary positions in every
// attention, pre-norm blocks (LayerNorm + QuickGELU MLP for Qwen2-VL; RMSNorm + SwiGLU for
// Qwen2.5-VL, whose blocks attend within windows except those in fullatt_block_indexes), and the
// merger that turns each merge_size x merge_size block of patches into one token of the
// language model's width. The matrix products run on the project's packed f32 kernels
// (kernels/cpu/gemm.h); norms, rotary and attention are plain loops. Attention never crosses an
// image (or a frame).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "format/tensor.h"
#include "kernels/cpu/packed_matrix.h"
#include "multimodal/qwen2vl_image_processor.h"

namespace pagedllm {

class SafetensorsFile;

enum class VisionFamily { kQwen2VL, kQwen25VL };

struct VisionEncoderConfig {
  VisionFamily family = VisionFamily::kQwen25VL;
  int depth = 0;
  int hidden_size = 0;  // the ViT width (Qwen2-VL's embed_dim)
  int num_heads = 0;
  int intermediate_size = 0;  // the MLP width (Qwen2-VL: embed_dim * mlp_ratio)
  int out_hidden_size = 0;    // the language model's width (Qwen2-VL's vision hidden_size)
  int in_channels = 3;
  int patch_size = 14;
  int temporal_patch_size = 2;
  int spatial_merge_size = 2;
  int window_size = 112;  // Qwen2.5-VL: attention windows of this many pixels square
  std::vector<int> fullatt_block_indexes;  // Qwen2.5-VL: blocks with full attention
  float norm_eps = 1e-6f;
  // The matrix products' weights: f32 (every checkpoint's values exactly); bf16 (the kernels'
  // bf16 products, twice the arithmetic rate where the CPU has AVX512-BF16 or AMX; exact for a
  // bf16 checkpoint's weights, the activations rounded to bf16 as HF's bf16 run rounds them);
  // or q8_0 (int8 products on quantized activations, as llama.cpp runs a q8_0 projector;
  // matrices whose rows hold no whole block use bf16).
  DType matmul_dtype = DType::kF32;

  int head_dim() const { return hidden_size / num_heads; }
  int patch_dim() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
  // From a whole config.json: the family from model_type (qwen2_vl / qwen2_5_vl), the sizes from
  // vision_config. Throws std::invalid_argument on what is missing or inconsistent.
  static VisionEncoderConfig from_hf_config(const nlohmann::json& config);
};

// Weights in f32 by HF name, e.g. "blocks.0.attn.qkv.weight" (the "visual." prefix is the
// loader's business). Throws std::invalid_argument when a tensor is missing or has another
// number of elements than `elements`.
using VisionWeightSource =
    std::function<std::vector<float>(const std::string& name, size_t elements)>;

// A source over a safetensors file (F32, F16 or BF16 tensors) whose names start with prefix,
// e.g. "visual." or "model.visual."; the file must outlive the source.
VisionWeightSource safetensors_vision_weights(const SafetensorsFile& file, std::string prefix);

class VisionEncoder {
 public:
  VisionEncoder(VisionEncoderConfig config, const VisionWeightSource& weights);

  // pixel_values: the images' ProcessedImage::pixel_values one after another, grids their
  // grids. Returns [sum of num_image_tokens, out_hidden_size] row-major, image by image, rows in
  // the order of the images' <|image_pad|> tokens.
  std::vector<float> encode(std::span<const float> pixel_values,
                            std::span<const GridTHW> grids) const;

  const VisionEncoderConfig& config() const { return config_; }

 private:
  struct Linear {
    cpu::PackedMatrix weight;  // [out, in], packed for gemm_packed
    std::vector<float> bias;   // [out] (empty: no bias)
    int in = 0, out = 0;
  };
  struct Norm {
    std::vector<float> weight, bias;  // bias empty for RMSNorm
  };
  struct Block {
    Norm norm1, norm2;
    Linear qkv, proj;
    Linear fc1, fc2;        // Qwen2-VL
    Linear gate, up, down;  // Qwen2.5-VL
  };

  Linear linear(const VisionWeightSource& w, const std::string& name, int in, int out) const;
  static std::vector<float> apply(const Linear& l, std::span<const float> x);  // x W^T + b
  Norm norm(const VisionWeightSource& w, const std::string& name, int width) const;
  void apply_norm(const Norm& n, std::span<float> rows, int width) const;
  void attention(const Block& b, std::vector<float>& x, std::span<const float> cos,
                 std::span<const float> sin, std::span<const int64_t> segments) const;
  // Attention of one head over the rows [begin, end) of one segment, into `out`.
  void attend_segment(const std::vector<float>& qkv, int64_t begin, int64_t end, int head,
                      std::vector<float>& out) const;
  void mlp(const Block& b, std::vector<float>& x) const;
  std::vector<float> merge(std::vector<float>& x) const;  // final norm, then the merger

  VisionEncoderConfig config_;
  Linear patch_embed_;
  std::vector<Block> blocks_;
  Norm merger_norm_;
  Linear merger_fc1_, merger_fc2_;
};

}  // namespace pagedllm
