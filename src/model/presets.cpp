#include "model/presets.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "sampling/sampler.h"

namespace pagedllm {

ModelConfig preset_config(const std::string& name) {
  ModelConfig c;
  c.bos_token_id = 1;
  c.eos_token_id = 2;
  if (name == "llama-110m") {
    c.dim = 768, c.hidden_dim = 2048, c.n_layers = 12, c.n_heads = 12, c.n_kv_heads = 12;
    c.vocab_size = 32000, c.max_seq_len = 2048;
  } else if (name == "llama-1b") {
    c.dim = 2048, c.hidden_dim = 8192, c.n_layers = 16, c.n_heads = 32, c.n_kv_heads = 8;
    c.vocab_size = 128256, c.max_seq_len = 131072, c.rope_theta = 500000.0f;
    c.rope_scaling = Llama3RopeScaling{32.0f, 1.0f, 4.0f, 8192};
    c.tied_embeddings = true;
  } else if (name == "qwen2-0.5b") {
    c.architecture = "qwen2";
    c.dim = 896, c.hidden_dim = 4864, c.n_layers = 24, c.n_heads = 14, c.n_kv_heads = 2;
    c.vocab_size = 151936, c.max_seq_len = 32768, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f;
    c.qkv_bias = true, c.tied_embeddings = true;
  } else if (name == "tiny") {
    c.dim = 64, c.hidden_dim = 128, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
    c.vocab_size = 512, c.max_seq_len = 256;
  } else if (name == "tiny-kquant") {  // every matrix row holds whole 256-element k-quant blocks
    c.dim = 256, c.hidden_dim = 512, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
    c.vocab_size = 512, c.max_seq_len = 256;
  } else if (name == "tiny-tp") {  // heads, KV heads and Q8_0 blocks split over 2 or 4 ranks
    c.dim = 256, c.hidden_dim = 512, c.n_layers = 2, c.n_heads = 8, c.n_kv_heads = 4;
    c.vocab_size = 512, c.max_seq_len = 256;
  } else if (name == "tiny-llama3") {
    c.dim = 128, c.hidden_dim = 256, c.n_layers = 2, c.n_heads = 8, c.n_kv_heads = 2;
    c.vocab_size = 640, c.max_seq_len = 4096, c.rope_theta = 500000.0f;
    c.rope_scaling = Llama3RopeScaling{8.0f, 1.0f, 4.0f, 64};
    c.tied_embeddings = true;
  } else if (name == "tiny-qwen2") {
    c.architecture = "qwen2";
    c.dim = 96, c.hidden_dim = 160, c.n_layers = 2, c.n_heads = 6, c.n_kv_heads = 2;
    c.vocab_size = 512, c.max_seq_len = 512, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f;
    c.qkv_bias = true, c.tied_embeddings = true;
  } else if (name == "tiny-qwen3") {
    c.architecture = "qwen3";
    c.dim = 64, c.hidden_dim = 192, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
    c.vocab_size = 512, c.max_seq_len = 512, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f;
    c.qk_norm = true;
    c.head_dim = 32;  // Qwen3 sets head_dim apart from dim / heads
    return c;
  } else if (name == "qwen25-vl-3b") {  // Qwen2.5-VL-3B-Instruct's language model
    c.architecture = "qwen2vl";
    c.dim = 2048, c.hidden_dim = 11008, c.n_layers = 36, c.n_heads = 16, c.n_kv_heads = 2;
    c.vocab_size = 151936, c.max_seq_len = 128000, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f;
    c.qkv_bias = true, c.tied_embeddings = true;
    c.mrope_section = {16, 24, 24};
    c.bos_token_id = 151643, c.eos_token_id = 151645;  // <|endoftext|>, <|im_end|>
  } else if (name == "tiny-qwen2-vl" || name == "tiny-qwen25-vl") {
    c.architecture = "qwen2vl";
    c.dim = 64, c.hidden_dim = 128, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2;
    c.vocab_size = 512, c.max_seq_len = 4096, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f;
    c.qkv_bias = true, c.tied_embeddings = name == "tiny-qwen25-vl";  // as 3B; Qwen2-VL-7B unties
    c.mrope_section = {2, 3, 3};                                      // head_dim 16
    c.bos_token_id = 480, c.eos_token_id = 482;                       // <|endoftext|>, <|im_end|>
  } else {
    throw std::invalid_argument("unknown preset '" + name +
                                "' (llama-110m, llama-1b, qwen2-0.5b, qwen25-vl-3b; tests: tiny, "
                                "tiny-kquant, tiny-tp, tiny-llama3, tiny-qwen2, tiny-qwen3, "
                                "tiny-qwen2-vl, tiny-qwen25-vl)");
  }
  c.head_dim = c.dim / c.n_heads;
  return c;
}

std::vector<std::string> preset_names() {
  return {"llama-110m", "llama-1b",    "qwen2-0.5b",    "qwen25-vl-3b",
          "tiny",       "tiny-kquant", "tiny-tp",       "tiny-llama3",
          "tiny-qwen2", "tiny-qwen3",  "tiny-qwen2-vl", "tiny-qwen25-vl"};
}

SentencePieceVocab synthetic_vocab(int size) {
  SentencePieceVocab v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.pieces.emplace_back(buf);
  }
  v.pieces.push_back(v.space_marker);
  // Letter strings in base 26 of growing length; even ones carry the word-start marker.
  for (int64_t n = 0; static_cast<int>(v.pieces.size()) < size; ++n) {
    std::string word;
    for (int64_t x = n / 2 + 1; x > 0; x = (x - 1) / 26)
      word.insert(word.begin(), static_cast<char>('a' + (x - 1) % 26));
    v.pieces.push_back(n % 2 == 0 ? v.space_marker + word : word);
  }
  v.pieces.resize(static_cast<size_t>(size));
  v.scores.resize(v.pieces.size());
  for (size_t i = 0; i < v.scores.size(); ++i)
    v.scores[i] = i < 259 ? 0.0f : -static_cast<float>(i);
  v.special.assign(v.pieces.size(), 0);
  v.special[0] = v.special[1] = v.special[2] = 1;
  v.bos = 1;
  v.eos = 2;
  return v;
}

void fill_random_normal(uint64_t stream, double stddev, std::vector<float>& out) {
  const auto n = static_cast<int64_t>(out.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i += 2) {
    // Box-Muller on two counter-based uniforms.
    const double u1 = std::max(uniform_draw(stream, static_cast<uint64_t>(i)), 1e-300);
    const double u2 = uniform_draw(stream, static_cast<uint64_t>(i) + 1);
    const double r = stddev * std::sqrt(-2.0 * std::log(u1));
    out[static_cast<size_t>(i)] = static_cast<float>(r * std::cos(2.0 * std::numbers::pi * u2));
    if (i + 1 < n)
      out[static_cast<size_t>(i + 1)] =
          static_cast<float>(r * std::sin(2.0 * std::numbers::pi * u2));
  }
}

WeightSource random_weights(const ModelConfig& config, uint64_t seed) {
  (void)config;
  return [seed](WeightRole role, int layer, std::vector<float>& out) {
    const bool is_norm = role == WeightRole::kAttnNorm || role == WeightRole::kFfnNorm ||
                         role == WeightRole::kFinalNorm || role == WeightRole::kQNorm ||
                         role == WeightRole::kKNorm;
    if (is_norm) {
      std::fill(out.begin(), out.end(), 1.0f);
      return;
    }
    const uint64_t stream =
        seed * 1000003ULL + static_cast<uint64_t>(role) * 4099ULL + static_cast<uint64_t>(layer);
    fill_random_normal(stream, 0.02, out);
  };
}

}  // namespace pagedllm
