#include "loader/model_arch.h"

#include <array>
#include <stdexcept>

namespace pagedllm {

namespace {

using R = WeightRole;

// Llama, Qwen2 and Qwen3 name their tensors alike; Qwen2 adds the QKV biases and Qwen3 the
// per-head Q/K norms, which the loaders bind only when the file has them.
constexpr TensorNameEntry kLlamaTensors[] = {
    {R::kEmbedding, false, "token_embd.weight", "model.embed_tokens.weight"},
    {R::kAttnNorm, true, "blk.{}.attn_norm.weight", "model.layers.{}.input_layernorm.weight"},
    {R::kWq, true, "blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight"},
    {R::kWk, true, "blk.{}.attn_k.weight", "model.layers.{}.self_attn.k_proj.weight"},
    {R::kWv, true, "blk.{}.attn_v.weight", "model.layers.{}.self_attn.v_proj.weight"},
    {R::kWo, true, "blk.{}.attn_output.weight", "model.layers.{}.self_attn.o_proj.weight"},
    {R::kBq, true, "blk.{}.attn_q.bias", "model.layers.{}.self_attn.q_proj.bias"},
    {R::kBk, true, "blk.{}.attn_k.bias", "model.layers.{}.self_attn.k_proj.bias"},
    {R::kBv, true, "blk.{}.attn_v.bias", "model.layers.{}.self_attn.v_proj.bias"},
    {R::kQNorm, true, "blk.{}.attn_q_norm.weight", "model.layers.{}.self_attn.q_norm.weight"},
    {R::kKNorm, true, "blk.{}.attn_k_norm.weight", "model.layers.{}.self_attn.k_norm.weight"},
    {R::kFfnNorm, true, "blk.{}.ffn_norm.weight",
     "model.layers.{}.post_attention_layernorm.weight"},
    {R::kGate, true, "blk.{}.ffn_gate.weight", "model.layers.{}.mlp.gate_proj.weight"},
    {R::kUp, true, "blk.{}.ffn_up.weight", "model.layers.{}.mlp.up_proj.weight"},
    {R::kDown, true, "blk.{}.ffn_down.weight", "model.layers.{}.mlp.down_proj.weight"},
    {R::kFinalNorm, false, "output_norm.weight", "model.norm.weight"},
    {R::kOutput, false, "output.weight", "lm_head.weight"},
    {R::kRopeFreqs, false, "rope_freqs.weight", ""},
};

constexpr std::string_view kLlamaClasses[] = {"LlamaForCausalLM", "MistralForCausalLM"};
constexpr std::string_view kQwen2Classes[] = {"Qwen2ForCausalLM"};
constexpr std::string_view kQwen3Classes[] = {"Qwen3ForCausalLM"};
// The language model of Qwen2-VL and Qwen2.5-VL: Qwen2 with M-RoPE (llama.cpp's `qwen2vl` for
// both). Their visual.* tensors belong to the vision encoder, not to this table.
constexpr std::string_view kQwen2VlClasses[] = {"Qwen2VLForConditionalGeneration",
                                                "Qwen2_5_VLForConditionalGeneration"};

constexpr std::array<ModelArch, 4> kArchs = {{
    {"llama", kLlamaClasses, kLlamaTensors, RopeStyle::kInterleaved, ""},
    {"qwen2", kQwen2Classes, kLlamaTensors, RopeStyle::kNeox, ""},
    {"qwen3", kQwen3Classes, kLlamaTensors, RopeStyle::kNeox, ""},
    {"qwen2vl", kQwen2VlClasses, kLlamaTensors, RopeStyle::kNeox, "model.language_model."},
}};

}  // namespace

const ModelArch* find_arch(std::string_view name) {
  for (const ModelArch& a : kArchs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ModelArch* find_arch_by_hf_class(std::string_view hf_class) {
  for (const ModelArch& a : kArchs) {
    for (std::string_view c : a.hf_classes) {
      if (c == hf_class) return &a;
    }
  }
  return nullptr;
}

std::string supported_arch_names() {
  std::string out;
  for (const ModelArch& a : kArchs) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

std::string tensor_name(const ModelArch& arch, WeightRole role, TensorFileFormat format,
                        int layer) {
  for (const TensorNameEntry& e : arch.tensors) {
    if (e.role != role) continue;
    const std::string_view pattern = format == TensorFileFormat::kGguf ? e.gguf : e.hf;
    if (pattern.empty()) break;
    std::string name(pattern);
    if (e.per_layer) name.replace(name.find("{}"), 2, std::to_string(layer));
    return name;
  }
  throw std::invalid_argument("architecture " + std::string(arch.name) +
                              " has no tensor for this role in this format");
}

std::string canonical_hf_name(const ModelArch& arch, const std::string& file_name) {
  const std::string_view alias = arch.hf_language_model_prefix;
  if (alias.empty() || !file_name.starts_with(alias)) return file_name;
  return "model." + file_name.substr(alias.size());
}

}  // namespace pagedllm
