// --kv-cache-dtype auto chooses what vLLM and llama.cpp users get: f32 weights keep an f32
// cache; 16-bit and quantized weights get a bf16 one (vLLM's 16-bit model dtype, llama.cpp's
// f16 default), so the same budget holds twice f32's tokens.
#include <gtest/gtest.h>

#include <string>

#include "loader/model_export.h"
#include "model/presets.h"
#include "pagedllm/engine.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

std::string tiny_gguf(DType dtype, const std::string& name) {
  ExportSpec spec;
  spec.config = preset_config("tiny");
  spec.dtype = dtype;
  spec.vocab = synthetic_vocab(spec.config.vocab_size);
  const std::string path = test::temp_path(name);
  export_gguf(spec, random_weights(spec.config, 3), path);
  return path;
}

int64_t pool_tokens(const std::string& model, const std::string& kv_dtype) {
  EngineOptions o;
  o.model = model;
  o.kv_cache_dtype = kv_dtype;
  o.kv_cache_memory_gib = 0.0005;
  o.max_num_seqs = 256;
  return Engine(o).kv_cache_tokens();
}

TEST(KvCacheDtype, AutoIsBf16ForQuantizedAnd16BitWeightsAndF32ForF32Weights) {
  for (const DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kBF16, DType::kF16}) {
    const std::string model =
        tiny_gguf(dtype, std::string("kv-auto-") + to_string(dtype) + ".gguf");
    const int64_t f32 = pool_tokens(model, "f32"), bf16 = pool_tokens(model, "bf16");
    EXPECT_GT(bf16, f32 * 19 / 10) << to_string(dtype);
    EXPECT_EQ(pool_tokens(model, "auto"), bf16) << to_string(dtype);
  }
  const std::string f32_model = tiny_gguf(DType::kF32, "kv-auto-f32.gguf");
  EXPECT_EQ(pool_tokens(f32_model, "auto"), pool_tokens(f32_model, "f32"));
}

}  // namespace
}  // namespace pagedllm
