// Round trips through the writers. The RoPE proof: stories260K (interleaved Q/K) stored as a
// Hugging Face directory with the HF (rotate-half) permutation, loaded back, gives the same
// greedy tokens.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "loader/load_model.h"
#include "loader/model_export.h"
#include "pagedllm/engine.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using Ids = std::vector<int32_t>;

Ids expected_ids() {
  std::ifstream in(test::model_path("stories260K/expected.json"));
  return nlohmann::json::parse(in)["greedy_ids"].get<Ids>();
}

Ids greedy(const std::string& model, const std::string& tokenizer, int n) {
  EngineOptions o;
  o.model = model;
  o.tokenizer = tokenizer;
  o.max_model_len = 512;
  o.num_blocks = 64;
  Engine e(o);
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = n;
  p.ignore_eos = true;
  return e.generate(std::vector<Ids>{{1}}, p)[0].token_ids;
}

ExportSpec spec_of(const ModelWeights& w, DType dtype) {
  ExportSpec spec;
  spec.config = w.config;
  spec.source_rope = w.rope_style;
  spec.dtype = dtype;
  return spec;
}

TEST(ModelExport, HuggingFaceLayoutWithRotateHalfRopeGivesTheSameGreedyTokens) {
  const ModelWeights w = load_model(test::model_path("stories260K/stories260K.bin"));
  const std::string dir = test::temp_path("stories260K-hf");
  export_hf_directory(spec_of(w, DType::kF32), source_of(w), dir);
  const ModelWeights hf = load_model(dir);
  EXPECT_EQ(hf.rope_style, RopeStyle::kNeox);
  // Q rows really were permuted: head 0's row 1 (interleaved) is now row head_dim / 2.
  const int hd = w.config.head_dim;
  const auto* q_in = reinterpret_cast<const float*>(w.layers[0].wq.row(1));
  const auto* q_hf = reinterpret_cast<const float*>(hf.layers[0].wq.row(hd / 2));
  EXPECT_EQ(std::vector<float>(q_in, q_in + 8), std::vector<float>(q_hf, q_hf + 8));
  EXPECT_EQ(greedy(dir, test::model_path("stories260K/tok512.bin"), 200), expected_ids());
}

TEST(ModelExport, GgufReExportRoundTripsExactlyInF32) {
  const ModelWeights w = load_model(test::model_path("stories260K/stories260K.gguf"));
  const std::string path = test::temp_path("stories260K-copy.gguf");
  export_gguf(spec_of(w, DType::kF32), source_of(w), path);
  EXPECT_EQ(greedy(path, test::model_path("stories260K/tok512.bin"), 200), expected_ids());
}

TEST(ModelExport, LowerPrecisionFilesLoadAndStayCloseToF32) {
  const ModelWeights w = load_model(test::model_path("stories260K/stories260K.gguf"));
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kQ8_0}) {
    SCOPED_TRACE(to_string(dtype));
    const std::string path =
        test::temp_path(std::string("stories260K-") + to_string(dtype) + ".gguf");
    export_gguf(spec_of(w, dtype), source_of(w), path);
    const ModelWeights q = load_model(path);
    EXPECT_EQ(q.layers[0].wq.dtype, dtype);
    const Ids ids = greedy(path, test::model_path("stories260K/tok512.bin"), 20);
    const Ids ref = expected_ids();
    // Greedy decoding may drift late, but the first tokens of a 260K model survive 8-bit weights.
    EXPECT_EQ(Ids(ids.begin(), ids.begin() + 5), Ids(ref.begin(), ref.begin() + 5));
  }
  const std::string hf_bf16 = test::temp_path("stories260K-hf-bf16");
  export_hf_directory(spec_of(w, DType::kBF16), source_of(w), hf_bf16);
  EXPECT_EQ(load_model(hf_bf16).layers[0].w_up.dtype, DType::kBF16);
}

TEST(ModelExport, BadHuggingFaceDirectoriesGiveClearErrors) {
  const std::string dir = test::temp_path("bad-hf");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << R"({"architectures": ["GPT2LMHeadModel"]})";
  try {
    load_model(dir);
    FAIL();
  } catch (const ModelLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("GPT2LMHeadModel"), std::string::npos);
  }
  std::ofstream(dir + "/config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
    "intermediate_size": 172, "num_hidden_layers": 1, "num_attention_heads": 8, "vocab_size": 512})";
  try {
    load_model(dir);
    FAIL();
  } catch (const ModelLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos);
  }
}

}  // namespace
}  // namespace pagedllm
