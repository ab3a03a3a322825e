// The one table of tensor names: each role's GGUF and Hugging Face name per architecture, with
// the layer filled in, and the architectures found by their GGUF and Hugging Face names.
#include "loader/model_arch.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

namespace pagedllm {
namespace {

TEST(ModelArch, NamesEachRoleAsGgufAndHuggingFaceFilesDo) {
  const ModelArch* llama = find_arch("llama");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(tensor_name(*llama, WeightRole::kWq, TensorFileFormat::kGguf, 11),
            "blk.11.attn_q.weight");
  EXPECT_EQ(tensor_name(*llama, WeightRole::kWq, TensorFileFormat::kHuggingFace, 11),
            "model.layers.11.self_attn.q_proj.weight");
  EXPECT_EQ(tensor_name(*llama, WeightRole::kFfnNorm, TensorFileFormat::kHuggingFace, 0),
            "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(tensor_name(*llama, WeightRole::kDown, TensorFileFormat::kGguf, 3),
            "blk.3.ffn_down.weight");
  EXPECT_EQ(tensor_name(*llama, WeightRole::kEmbedding, TensorFileFormat::kGguf),
            "token_embd.weight");
  EXPECT_EQ(tensor_name(*llama, WeightRole::kOutput, TensorFileFormat::kHuggingFace),
            "lm_head.weight");
  const ModelArch* qwen2 = find_arch("qwen2");
  ASSERT_NE(qwen2, nullptr);
  EXPECT_EQ(tensor_name(*qwen2, WeightRole::kBk, TensorFileFormat::kGguf, 0), "blk.0.attn_k.bias");
  EXPECT_EQ(
      tensor_name(*find_arch("qwen3"), WeightRole::kKNorm, TensorFileFormat::kHuggingFace, 27),
      "model.layers.27.self_attn.k_norm.weight");
}

TEST(ModelArch, EveryRoleOfAnArchitectureHasOneDistinctNamePerFormat) {
  for (const char* name : {"llama", "qwen2", "qwen3", "qwen2vl"}) {
    const ModelArch* arch = find_arch(name);
    ASSERT_NE(arch, nullptr) << name;
    std::set<std::string> gguf, hf;
    for (const TensorNameEntry& e : arch->tensors) {
      EXPECT_TRUE(gguf.insert(tensor_name(*arch, e.role, TensorFileFormat::kGguf, 5)).second);
      if (!e.hf.empty()) {
        EXPECT_TRUE(
            hf.insert(tensor_name(*arch, e.role, TensorFileFormat::kHuggingFace, 5)).second);
      }
      EXPECT_EQ(e.per_layer, e.gguf.find("{}") != std::string_view::npos) << e.gguf;
    }
  }
}

TEST(ModelArch, FindsArchitecturesByHuggingFaceClassAndRefusesUnknownOnes) {
  EXPECT_EQ(find_arch_by_hf_class("MistralForCausalLM"), find_arch("llama"));
  EXPECT_EQ(find_arch_by_hf_class("Qwen2ForCausalLM"), find_arch("qwen2"));
  EXPECT_EQ(find_arch_by_hf_class("Qwen3ForCausalLM"), find_arch("qwen3"));
  EXPECT_EQ(find_arch_by_hf_class("GPT2LMHeadModel"), nullptr);
  EXPECT_EQ(find_arch("gpt2"), nullptr);
  EXPECT_EQ(find_arch_by_hf_class("Qwen2VLForConditionalGeneration"), find_arch("qwen2vl"));
  EXPECT_EQ(find_arch_by_hf_class("Qwen2_5_VLForConditionalGeneration"), find_arch("qwen2vl"));
  EXPECT_EQ(supported_arch_names(), "llama, qwen2, qwen3, qwen2vl");
  // llama.cpp's rope_freqs tensor has no Hugging Face twin.
  EXPECT_THROW(
      tensor_name(*find_arch("llama"), WeightRole::kRopeFreqs, TensorFileFormat::kHuggingFace),
      std::invalid_argument);
}

TEST(ModelArch, NewerTransformersLanguageModelNamesMapToTheTables) {
  const ModelArch& vl = *find_arch("qwen2vl");
  EXPECT_EQ(canonical_hf_name(vl, "model.language_model.layers.3.self_attn.q_proj.bias"),
            "model.layers.3.self_attn.q_proj.bias");
  EXPECT_EQ(canonical_hf_name(vl, "model.language_model.embed_tokens.weight"),
            tensor_name(vl, WeightRole::kEmbedding, TensorFileFormat::kHuggingFace));
  EXPECT_EQ(canonical_hf_name(vl, "lm_head.weight"), "lm_head.weight");
  EXPECT_EQ(canonical_hf_name(vl, "model.visual.blocks.0.norm1.weight"),
            "model.visual.blocks.0.norm1.weight");
  // Text-only architectures have no such alias.
  EXPECT_EQ(canonical_hf_name(*find_arch("qwen2"), "model.language_model.norm.weight"),
            "model.language_model.norm.weight");
}

}  // namespace
}  // namespace pagedllm
