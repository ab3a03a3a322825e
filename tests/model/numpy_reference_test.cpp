// Logits against an independent numpy forward pass (tests/reference/llama_reference.py, run with
// Debian's /usr/bin/python3), on random-weight models of each architecture, format and dtype.
// The prompt is fed through a 4-token budget, so it crosses steps and blocks of the paged cache.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/engine_core.h"
#include "kernels/cpu/gemm_onednn.h"
#include "loader/load_model.h"
#include "loader/model_export.h"
#include "model/llama_model.h"
#include "model/perturbed_weights.h"
#include "model/presets.h"
#include "sampling/sampler.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

struct Case {
  const char* preset;
  bool gguf;
  DType dtype;
  // Max |pagedllm - numpy| allowed, relative to max(1, max |logit|). The stored weights are the
  // same values on both sides, so with an f32 KV cache only f32-vs-f64 arithmetic differs,
  // whatever the weight dtype (1e-4; bf16 weights see activations rounded to bf16, and the
  // reference rounds them too). A bf16 KV cache rounds K and V to 8 bits of mantissa
  // (3e-2). Block-quantized weights multiply activations quantized to int8 (the reference
  // emulates that), and a code that sits near a rounding boundary can round the other way
  // between f32 and f64 arithmetic: perturbing the reference's activations by 1e-6 moves its
  // logits by up to 9e-3 on these models, so those cases allow 3e-2 (a wrong layout or a
  // missing scale moves them by O(1)).
  double tolerance;
  DType kv_dtype = DType::kF32;
  bool k_quant_mix = false;  // Q6_K for attn_v, ffn_down and output, as llama.cpp's Q4_K_M
  // bf16 products of 8 rows or more through oneDNN (gemm_onednn.h); the prompt then goes
  // through a 16-token budget, so that its prefill has 13 rows.
  bool onednn = false;
};

std::string name_of(const Case& c) {
  std::string n = std::string(c.preset) + "_" + (c.gguf ? "gguf_" : "hf_") + to_string(c.dtype) +
                  (c.kv_dtype == DType::kBF16 ? "_kv_bf16" : "") + (c.k_quant_mix ? "_M" : "") +
                  (c.onednn ? "_onednn" : "");
  for (char& ch : n) {
    if (ch == '-') ch = '_';
  }
  return n;
}

// Records the logits of the last step.
class LogitsRecorder : public Model {
 public:
  explicit LogitsRecorder(Model& inner) : inner_(inner) {}
  int vocab_size() const override { return inner_.vocab_size(); }
  KVCacheSpec kv_cache_spec(int num_blocks, int block_size, DType dtype) const override {
    return inner_.kv_cache_spec(num_blocks, block_size, dtype);
  }
  void bind_kv_cache(PagedKVCache& cache) override { inner_.bind_kv_cache(cache); }
  void forward(const ModelInputs& in, std::span<float> logits) override {
    inner_.forward(in, logits);
    last.assign(logits.begin(), logits.begin() + vocab_size());
  }
  std::vector<float> last;

 private:
  Model& inner_;
};

std::vector<double> numpy_logits(const std::string& model, const std::vector<int32_t>& ids) {
  std::string cmd =
      "/usr/bin/python3 " PAGEDLLM_SOURCE_DIR "/tests/reference/llama_reference.py " + model;
  for (int32_t id : ids) cmd += " " + std::to_string(id);
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << "numpy reference failed: " << cmd;
  return nlohmann::json::parse(out).get<std::vector<double>>();
}

class NumpyReference : public ::testing::TestWithParam<Case> {};

TEST_P(NumpyReference, LastPositionLogitsMatch) {
  const Case& c = GetParam();
  if (c.onednn && cpu::onednn_isa() == "none") GTEST_SKIP() << "oneDNN has no bf16 matmul here";
  const cpu::MatmulBackend saved = cpu::matmul_backend();
  cpu::set_matmul_backend(c.onednn ? cpu::MatmulBackend::kOneDnn : cpu::MatmulBackend::kNative);
  struct Restore {
    cpu::MatmulBackend backend;
    ~Restore() { cpu::set_matmul_backend(backend); }
  } restore{saved};
  ExportSpec spec;
  spec.config = preset_config(c.preset);
  spec.dtype = c.dtype;
  if (c.k_quant_mix) spec.sensitive_dtype = DType::kQ6_K;
  spec.source_rope = RopeStyle::kInterleaved;
  spec.vocab = synthetic_vocab(spec.config.vocab_size);
  const std::string path = test::temp_path("ref-" + name_of(GetParam()) + (c.gguf ? ".gguf" : ""));
  if (c.gguf) {
    export_gguf(spec, test::perturbed_weights(spec.config, 11), path);
  } else {
    export_hf_directory(spec, test::perturbed_weights(spec.config, 11), path);
  }

  auto weights = std::make_shared<const ModelWeights>(load_model(path));
  EngineConfig cfg;
  cfg.cache.block_size = 4;
  cfg.cache.num_blocks = 64;
  cfg.scheduler.max_model_len = 128;
  cfg.scheduler.max_num_batched_tokens = c.onednn ? 16 : 4;
  cfg.scheduler.max_num_seqs = 4;
  PagedKVCache cache(LlamaModel::kv_cache_spec(weights->config, cfg.cache.num_blocks,
                                               cfg.cache.block_size, c.kv_dtype));
  LlamaModel model(weights, cache, cfg.scheduler.max_num_batched_tokens);
  LogitsRecorder recorder(model);
  EngineCore engine(cfg, recorder);
  const std::vector<int32_t> prompt = {1, 17, 250, 3, 99, 400, 7, 7, 64, 311, 5, 42, 128};
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 1;
  engine.add_request(std::make_unique<Request>("r", prompt, p));
  while (engine.has_unfinished_requests()) engine.step();

  const std::vector<double> ref = numpy_logits(path, prompt);
  ASSERT_EQ(ref.size(), recorder.last.size());
  double max_abs = 1.0, max_diff = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(ref[i]));
    max_diff = std::max(max_diff, std::fabs(ref[i] - recorder.last[i]));
  }
  EXPECT_LE(max_diff, c.tolerance * max_abs) << "max |diff| " << max_diff;
}

INSTANTIATE_TEST_SUITE_P(
    RandomModels, NumpyReference,
    ::testing::Values(
        Case{"tiny", true, DType::kF32, 1e-4}, Case{"tiny", true, DType::kF16, 1e-4},
        Case{"tiny", true, DType::kBF16, 1e-4}, Case{"tiny", true, DType::kQ8_0, 3e-2},
        Case{"tiny", true, DType::kQ4_0, 3e-2}, Case{"tiny", false, DType::kF32, 1e-4},
        Case{"tiny", false, DType::kBF16, 1e-4}, Case{"tiny-llama3", true, DType::kBF16, 1e-4},
        Case{"tiny-llama3", false, DType::kF32, 1e-4}, Case{"tiny-qwen2", true, DType::kF32, 1e-4},
        Case{"tiny-qwen2", false, DType::kBF16, 1e-4}, Case{"tiny-qwen3", true, DType::kF16, 1e-4},
        Case{"tiny-qwen3", false, DType::kF32, 1e-4},
        Case{"tiny", true, DType::kF32, 3e-2, DType::kBF16},
        Case{"tiny-qwen2", false, DType::kBF16, 3e-2, DType::kBF16},
        Case{"tiny-kquant", true, DType::kQ4_K, 3e-2},
        Case{"tiny-kquant", true, DType::kQ5_K, 3e-2},
        Case{"tiny-kquant", true, DType::kQ6_K, 3e-2},
        Case{"tiny-kquant", true, DType::kQ4_K, 3e-2, DType::kF32, true},
        Case{"tiny", true, DType::kBF16, 1e-4, DType::kF32, false, true},
        Case{"tiny-llama3", false, DType::kBF16, 1e-4, DType::kF32, false, true},
        Case{"tiny-qwen2", false, DType::kBF16, 1e-4, DType::kF32, false, true}),
    [](const auto& info) { return name_of(info.param); });

}  // namespace
}  // namespace pagedllm
