// Writes a Llama-family model as GGUF (llama.cpp's tensor names and metadata keys) or as a
// Hugging Face directory (config.json + model.safetensors). Weights come from a WeightSource,
// so a random preset or a loaded model can be written the same way.
//
// RoPE layouts: GGUF `llama` files store Q/K rows in the interleaved-pair order, Hugging Face
// and GGUF qwen2/qwen3 in the rotate-half (NeoX) order; rows are permuted as needed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/tensor_writer.h"
#include "loader/model_arch.h"
#include "loader/model_weights.h"
#include "tokenizer/sentencepiece_bpe.h"

namespace pagedllm {

// Fills `out` (already sized) with the tensor's f32 values, row-major [out, in] for matrices,
// Q/K rows in the source's RoPE layout.
using WeightSource = std::function<void(WeightRole role, int layer, std::vector<float>& out)>;

struct ExportSpec {
  ModelConfig config;
  RopeStyle source_rope = RopeStyle::kInterleaved;
  DType dtype = DType::kF32;
  // llama.cpp's "_M" k-quant mixes: attn_v, ffn_down and the output matrix in this type (Q6_K).
  std::optional<DType> sensitive_dtype;
  std::optional<SentencePieceVocab> vocab;  // embedded in GGUF files
  std::string name = "pagedllm";
  // What a model beyond the language model adds (a vision-language model's vision tower and
  // tokenizer): tensors written after the LM's, a JSON object whose keys are set over the
  // generated config.json, and GGUF metadata written after the LM's keys.
  std::vector<TensorToWrite> extra_tensors;
  std::string hf_config_extra;
  std::vector<GGUFMetadataEntry> extra_gguf_metadata;
};

using Progress = std::function<void(size_t done, size_t total)>;

void export_gguf(const ExportSpec& spec, const WeightSource& source, const std::string& path,
                 const Progress& progress = {});
void export_hf_directory(const ExportSpec& spec, const WeightSource& source, const std::string& dir,
                         const Progress& progress = {});

// A source reading (and dequantizing) a loaded model.
WeightSource source_of(const ModelWeights& weights);

}  // namespace pagedllm
