// llama.cpp's projector files (the "mmproj" GGUF of its clip / mtmd code) for Qwen2-VL and
// Qwen2.5-VL, as its convert_hf_to_gguf.py writes them: clip.projector_type "qwen2vl_merger" or
// "qwen2.5vl_merger"; HF's fused qkv split into v.blk.N.attn_q / attn_k / attn_v; the Conv3d
// patch embedding split by frame into v.patch_embd.weight and v.patch_embd.weight.1; norm1 /
// norm2 as ln1 / ln2, attn.proj as attn_out, the MLP as ffn_up / ffn_down (and ffn_gate); the
// merger as v.post_ln, mm.0 and mm.2; full-attention blocks as clip.vision.n_wa_pattern.
#pragma once

#include <string>

#include "format/gguf_file.h"
#include "format/tensor.h"
#include "multimodal/vision_encoder.h"

namespace pagedllm {

// The encoder's shape from an mmproj file's metadata and tensor shapes. Throws ModelLoadError
// or std::invalid_argument naming what is missing or inconsistent.
VisionEncoderConfig vision_config_from_mmproj(const GGUFFile& file);

// HF-named f32 weights (as VisionEncoder asks for them) from an mmproj file: q/k/v fused back,
// the two patch-embedding frames interleaved back into the Conv3d, any stored type widened.
// The file must outlive the source.
VisionWeightSource mmproj_vision_weights(const GGUFFile& file);

// Writes an mmproj file from HF-named weights: matrices as `dtype` (f32, f16, bf16 or q8_0;
// with q8_0, f16 where a row holds no whole block; the patch embedding f16 in an f16 file, else
// f32), norms and biases as f32, as llama.cpp's converter does, with the preprocessor's mean
// and std.
void write_mmproj_gguf(const std::string& path, const VisionEncoderConfig& config,
                       const VisionWeightSource& weights, DType dtype,
                       const Qwen2VLImageProcessorConfig& preprocessor = {});

}  // namespace pagedllm
