// A loaded model: its configuration and views of every weight, plus whatever keeps those views
// alive (a memory map, or buffers the loader had to build).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/mapped_file.h"
#include "format/tensor.h"
#include "kernels/cpu/rope.h"
#include "loader/model_config.h"

namespace pagedllm {

struct LayerWeights {
  const float* attn_norm = nullptr;
  WeightMatrix wq, wk, wv, wo;
  const float* bq = nullptr;  // Qwen2 QKV biases
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;  // Qwen3 per-head RMSNorm of Q and K
  const float* k_norm = nullptr;
  const float* ffn_norm = nullptr;
  WeightMatrix w_gate, w_up, w_down;
};

struct ModelWeights {
  ModelConfig config;
  RopeStyle rope_style = RopeStyle::kInterleaved;
  WeightMatrix token_embedding;  // [vocab, dim]
  std::vector<LayerWeights> layers;
  const float* final_norm = nullptr;
  // Per-frequency divisors (GGUF rope_freqs, how llama.cpp stores Llama 3 rope scaling); null
  // when absent.
  const float* rope_freq_factors = nullptr;
  WeightMatrix output;  // [vocab, dim]; the embedding itself when tied
  std::string source;   // the file it came from, for messages

  std::vector<std::shared_ptr<MappedFile>> files;
  std::vector<std::vector<float>> owned;
  // Bytes built at load in another element type (a tensor-parallel rank's column slices).
  std::vector<std::vector<uint8_t>> owned_bytes;

  // Copies values into storage the weights own and returns a pointer to it.
  const float* own(std::vector<float> values) {
    owned.push_back(std::move(values));
    return owned.back().data();
  }
};

// The element types of the matrix weights (every layer's projections and the output layer) with
// how many matrices have each, most first (ties by name): "Q4_K:96,Q6_K:17" for llama-1b's
// Q4_K_M file, whose token embedding (Q6_K) alone would not say what the products run on.
std::string weight_type_mix(const ModelWeights& w);

}  // namespace pagedllm
