#include "loader/llama2c_loader.h"

#include <cstring>
#include <fstream>

namespace pagedllm {

namespace {

struct Header {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

ModelConfig config_from(const Header& h) {
  ModelConfig c;
  c.architecture = "llama";
  c.dim = h.dim;
  c.hidden_dim = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.n_heads > 0 ? h.dim / h.n_heads : 0;
  c.vocab_size = h.vocab_size < 0 ? -h.vocab_size : h.vocab_size;
  c.max_seq_len = h.seq_len;
  c.tied_embeddings = h.vocab_size > 0;
  c.bos_token_id = 1;
  c.eos_token_id = 2;
  return c;
}

// Floats in the file, in llama2.c's order; the classifier only when it is not shared.
int64_t expected_floats(const ModelConfig& c) {
  const int64_t d = c.dim, hd = c.hidden_dim, L = c.n_layers, v = c.vocab_size;
  const int64_t kv = c.kv_dim();
  int64_t n = v * d;                         // token embedding
  n += L * d;                                // rms_att
  n += L * d * d + 2 * L * kv * d;           // wq, wk, wv
  n += L * d * d;                            // wo
  n += L * d;                                // rms_ffn
  n += 3 * L * hd * d;                       // w1, w2, w3
  n += d;                                    // rms_final
  n += int64_t{c.max_seq_len} * c.head_dim;  // unused RoPE tables (real + imag)
  if (!c.tied_embeddings) n += v * d;
  return n;
}

bool read_header(const uint8_t* data, size_t size, Header& h) {
  if (size < sizeof(Header)) return false;
  std::memcpy(&h, data, sizeof h);
  return true;
}

}  // namespace

bool looks_like_llama2c(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto size = static_cast<int64_t>(in.tellg());
  Header h{};
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return false;
  ModelConfig c = config_from(h);
  try {
    c.validate(path);
  } catch (const ModelLoadError&) {
    return false;
  }
  if (c.dim % c.n_heads != 0) return false;
  return static_cast<int64_t>(sizeof h) + expected_floats(c) * 4 == size;
}

ModelWeights load_llama2c(const std::string& path) {
  auto file = std::make_shared<MappedFile>(path);
  Header h{};
  if (!read_header(file->data(), file->size(), h)) {
    throw ModelLoadError(path + ": too short for a llama2.c header (28 bytes)");
  }
  ModelWeights w;
  w.source = path;
  w.config = config_from(h);
  w.config.validate(path + " (llama2.c header)");
  const ModelConfig& c = w.config;
  if (c.dim % c.n_heads != 0) throw ModelLoadError(path + ": dim is not a multiple of n_heads");
  const int64_t need = static_cast<int64_t>(sizeof h) + expected_floats(c) * 4;
  if (static_cast<int64_t>(file->size()) < need) {
    throw ModelLoadError(path + ": truncated llama2.c checkpoint: expected " +
                         std::to_string(need) + " bytes, found " + std::to_string(file->size()));
  }

  const float* p = reinterpret_cast<const float*>(file->data() + sizeof h);
  auto take = [&p](int64_t n) {
    const float* start = p;
    p += n;
    return start;
  };
  auto matrix = [](const float* data, int rows, int cols) {
    return WeightMatrix{DType::kF32, rows, cols, data};
  };
  const int d = c.dim, hd = c.hidden_dim, kv = c.kv_dim(), L = c.n_layers;
  w.token_embedding = matrix(take(int64_t{c.vocab_size} * d), c.vocab_size, d);
  w.layers.resize(static_cast<size_t>(L));
  const float* rms_att = take(int64_t{L} * d);
  const float* wq = take(int64_t{L} * d * d);
  const float* wk = take(int64_t{L} * kv * d);
  const float* wv = take(int64_t{L} * kv * d);
  const float* wo = take(int64_t{L} * d * d);
  const float* rms_ffn = take(int64_t{L} * d);
  const float* w1 = take(int64_t{L} * hd * d);
  const float* w2 = take(int64_t{L} * d * hd);
  const float* w3 = take(int64_t{L} * hd * d);
  for (int l = 0; l < L; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    lw.attn_norm = rms_att + int64_t{l} * d;
    lw.wq = matrix(wq + int64_t{l} * d * d, d, d);
    lw.wk = matrix(wk + int64_t{l} * kv * d, kv, d);
    lw.wv = matrix(wv + int64_t{l} * kv * d, kv, d);
    lw.wo = matrix(wo + int64_t{l} * d * d, d, d);
    lw.ffn_norm = rms_ffn + int64_t{l} * d;
    lw.w_gate = matrix(w1 + int64_t{l} * hd * d, hd, d);
    lw.w_down = matrix(w2 + int64_t{l} * d * hd, d, hd);
    lw.w_up = matrix(w3 + int64_t{l} * hd * d, hd, d);
  }
  w.final_norm = take(d);
  take(int64_t{c.max_seq_len} * c.head_dim);  // precomputed RoPE tables: recomputed instead
  w.output = c.tied_embeddings ? w.token_embedding
                               : matrix(take(int64_t{c.vocab_size} * d), c.vocab_size, d);
  w.rope_style = RopeStyle::kInterleaved;
  w.files.push_back(std::move(file));
  return w;
}

}  // namespace pagedllm
