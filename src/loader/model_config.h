// The hyper-parameters of a Llama-family model, whatever file it came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagedllm {

// Llama 3 "rope_scaling": stretches low frequencies for long contexts.
struct Llama3RopeScaling {
  float factor = 8.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture = "llama";  // llama, qwen2, qwen3, qwen2vl
  int dim = 0;
  int hidden_dim = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  int max_seq_len = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  std::optional<Llama3RopeScaling> rope_scaling;
  bool tied_embeddings = false;
  bool qkv_bias = false;  // Qwen2
  bool qk_norm = false;   // Qwen3
  // M-RoPE (Qwen2-VL): how many of each head's head_dim / 2 rotary frequencies turn with the
  // temporal, height and width positions, in that order. Empty: ordinary 1-D RoPE.
  std::vector<int> mrope_section;
  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> eos_token_id;

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  // Throws ModelLoadError (naming `source`) for inconsistent values.
  void validate(const std::string& source) const;
};

}  // namespace pagedllm
