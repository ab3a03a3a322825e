#include "multimodal/vision_gguf.h"

#include <cmath>
#include <stdexcept>

#include "format/dequant.h"
#include "format/tensor_writer.h"

namespace pagedllm {

namespace {

constexpr const char* kQwen2VLProjector = "qwen2vl_merger";
constexpr const char* kQwen25VLProjector = "qwen2.5vl_merger";

std::string block(int i) {
  return "v.blk." + std::to_string(i) + ".";
}

std::vector<float> read_f32(const GGUFFile& file, const std::string& name) {
  const GGUFTensor* t = file.tensor(name);
  if (!t) throw std::invalid_argument("mmproj: missing tensor " + name);
  const auto dtype = dtype_of_ggml_type(t->ggml_type);
  if (!dtype) {
    throw std::invalid_argument("mmproj: " + name + " has unsupported type " +
                                ggml_type_name(t->ggml_type));
  }
  int64_t n = 1;
  for (int64_t d : t->dims) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(*dtype, t->data, out.data(), n);
  return out;
}

int64_t tensor_dim(const GGUFFile& file, const std::string& name, size_t index) {
  const GGUFTensor* t = file.tensor(name);
  if (!t || t->dims.size() <= index) {
    throw std::invalid_argument("mmproj: missing or malformed tensor " + name);
  }
  return t->dims[index];
}

// The GGUF name of an HF vision tensor name that maps one to one, or "".
std::string gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> kParts[] = {
      {"norm1.", "ln1."},          {"norm2.", "ln2."},
      {"attn.proj.", "attn_out."}, {"mlp.fc1.", "ffn_up."},
      {"mlp.fc2.", "ffn_down."},   {"mlp.gate_proj.", "ffn_gate."},
      {"mlp.up_proj.", "ffn_up."}, {"mlp.down_proj.", "ffn_down."}};
  if (hf.rfind("merger.ln_q.", 0) == 0) return "v.post_ln." + hf.substr(12);
  if (hf.rfind("merger.mlp.", 0) == 0) return "mm." + hf.substr(11);
  if (hf.rfind("blocks.", 0) != 0) return "";
  const size_t dot = hf.find('.', 7);
  const std::string rest = hf.substr(dot + 1);
  for (const auto& [from, to] : kParts) {
    const std::string f = from;
    if (rest.rfind(f, 0) == 0)
      return "v.blk." + hf.substr(7, dot - 7) + "." + to + rest.substr(f.size());
  }
  return "";
}

void check_count(const std::string& name, size_t got, size_t expected) {
  if (got != expected) {
    throw std::invalid_argument("mmproj: " + name + " has " + std::to_string(got) +
                                " elements, expected " + std::to_string(expected));
  }
}

}  // namespace

VisionEncoderConfig vision_config_from_mmproj(const GGUFFile& file) {
  const std::string projector = file.get_string("clip.projector_type");
  VisionEncoderConfig c;
  if (projector == kQwen2VLProjector) {
    c.family = VisionFamily::kQwen2VL;
  } else if (projector == kQwen25VLProjector) {
    c.family = VisionFamily::kQwen25VL;
  } else {
    throw std::invalid_argument("mmproj: projector type '" + projector +
                                "' is not qwen2vl_merger or qwen2.5vl_merger");
  }
  c.hidden_size = static_cast<int>(file.get_int("clip.vision.embedding_length"));
  c.num_heads = static_cast<int>(file.get_int("clip.vision.attention.head_count"));
  c.depth = static_cast<int>(file.get_int("clip.vision.block_count"));
  c.patch_size = static_cast<int>(file.find_int("clip.vision.patch_size").value_or(14));
  c.norm_eps = static_cast<float>(
      file.find_float("clip.vision.attention.layer_norm_epsilon").value_or(1e-6));
  // Shapes from the tensors: Qwen2-VL's converter writes the language model's width as
  // feed_forward_length, so the MLP width is read from ffn_up.
  c.intermediate_size = static_cast<int>(tensor_dim(file, block(0) + "ffn_up.weight", 1));
  c.out_hidden_size = static_cast<int>(tensor_dim(file, "mm.2.weight", 1));
  const int64_t merged = tensor_dim(file, "mm.0.weight", 0);
  c.spatial_merge_size = static_cast<int>(std::lround(std::sqrt(double(merged) / c.hidden_size)));
  c.temporal_patch_size = file.tensor("v.patch_embd.weight.1") ? 2 : 1;
  c.window_size = static_cast<int>(file.find_int("clip.vision.window_size").value_or(112));
  if (c.family == VisionFamily::kQwen25VL) {
    const int64_t pattern = file.find_int("clip.vision.n_wa_pattern").value_or(0);
    for (int64_t i = pattern - 1; pattern > 0 && i < c.depth; i += pattern) {
      c.fullatt_block_indexes.push_back(static_cast<int>(i));
    }
  }
  if (c.hidden_size <= 0 || c.num_heads <= 0 || c.depth <= 0 || c.hidden_size % c.num_heads ||
      c.head_dim() % 4 || c.spatial_merge_size < 1 ||
      int64_t{c.spatial_merge_size} * c.spatial_merge_size * c.hidden_size != merged) {
    throw std::invalid_argument("mmproj: inconsistent vision sizes");
  }
  return c;
}

VisionWeightSource mmproj_vision_weights(const GGUFFile& file) {
  return [&file](const std::string& name, size_t elements) -> std::vector<float> {
    if (name == "patch_embed.proj.weight") {
      // [out, c, t, p, p] from one [out, c, p, p] per frame.
      std::vector<std::vector<float>> frames = {read_f32(file, "v.patch_embd.weight")};
      if (file.tensor("v.patch_embd.weight.1")) {
        frames.push_back(read_f32(file, "v.patch_embd.weight.1"));
      }
      const size_t t = frames.size(),
                   pp = static_cast<size_t>(tensor_dim(file, "v.patch_embd.weight", 0) *
                                            tensor_dim(file, "v.patch_embd.weight", 1));
      check_count(name, frames[0].size() * t, elements);
      std::vector<float> out(elements);
      for (size_t oc = 0; oc < frames[0].size() / pp; ++oc)
        for (size_t f = 0; f < t; ++f)
          std::copy_n(&frames[f][oc * pp], pp, &out[(oc * t + f) * pp]);
      return out;
    }
    const size_t qkv = name.find(".attn.qkv.");
    if (qkv != std::string::npos) {
      const std::string prefix = block(std::stoi(name.substr(7))) + "attn_";
      const std::string suffix = name.substr(qkv + 10);
      std::vector<float> out;
      for (const char* part : {"q.", "k.", "v."}) {
        const std::vector<float> w = read_f32(file, prefix + part + suffix);
        out.insert(out.end(), w.begin(), w.end());
      }
      check_count(name, out.size(), elements);
      return out;
    }
    const std::string mapped = gguf_name(name);
    if (mapped.empty()) throw std::invalid_argument("mmproj: no tensor for " + name);
    std::vector<float> out = read_f32(file, mapped);
    check_count(mapped, out.size(), elements);
    return out;
  };
}

namespace {

struct MmprojWriter {
  const VisionEncoderConfig& config;
  const VisionWeightSource& weights;
  DType dtype;
  std::vector<TensorToWrite> tensors;

  void add(const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
    auto data = std::make_shared<std::vector<float>>(std::move(values));
    DType stored = shape.size() > 1 ? dtype : DType::kF32;
    // As llama.cpp's converter: the patch embedding (a convolution for ggml) is f16 in an f16
    // file and f32 otherwise; a matrix whose rows hold no whole Q8_0 block falls back to f16.
    if (name.starts_with("v.patch_embd."))
      stored = dtype == DType::kF16 ? DType::kF16 : DType::kF32;
    if (stored == DType::kQ8_0 && shape.back() % 32 != 0) stored = DType::kF16;
    tensors.push_back(
        {name, std::move(shape), stored, [data](std::vector<float>& out) { out = *data; }});
  }
  void linear(const std::string& hf, const std::string& gguf, int in, int out) {
    add(gguf + ".weight", {out, in}, weights(hf + ".weight", size_t(in) * out));
    add(gguf + ".bias", {out}, weights(hf + ".bias", out));
  }
  void norm(const std::string& hf, const std::string& gguf) {
    const int d = config.hidden_size;
    add(gguf + ".weight", {d}, weights(hf + ".weight", d));
    if (config.family == VisionFamily::kQwen2VL) add(gguf + ".bias", {d}, weights(hf + ".bias", d));
  }
};

// The clip metadata llama.cpp's converter writes for these projectors.
std::vector<GGUFMetadataEntry> mmproj_metadata(const VisionEncoderConfig& c,
                                               const Qwen2VLImageProcessorConfig& preprocessor) {
  const int d = c.hidden_size, f = c.intermediate_size, p = c.patch_size;
  const bool qwen25 = c.family == VisionFamily::kQwen25VL;
  std::vector<GGUFMetadataEntry> meta = {
      {"general.architecture", gguf_string("clip")},
      {"clip.has_vision_encoder", gguf_bool(true)},
      {"clip.projector_type", gguf_string(qwen25 ? kQwen25VLProjector : kQwen2VLProjector)},
      {"clip.vision.image_size", gguf_u32(560)},
      {"clip.vision.patch_size", gguf_u32(p)},
      {"clip.vision.embedding_length", gguf_u32(d)},
      {"clip.vision.feed_forward_length", gguf_u32(f)},
      {"clip.vision.projection_dim", gguf_u32(c.out_hidden_size)},
      {"clip.vision.block_count", gguf_u32(c.depth)},
      {"clip.vision.attention.head_count", gguf_u32(c.num_heads)},
      {"clip.vision.attention.layer_norm_epsilon", gguf_f32(c.norm_eps)},
      {"clip.vision.image_mean",
       gguf_f32_array({preprocessor.image_mean.begin(), preprocessor.image_mean.end()})},
      {"clip.vision.image_std",
       gguf_f32_array({preprocessor.image_std.begin(), preprocessor.image_std.end()})},
      {qwen25 ? "clip.use_silu" : "clip.use_gelu", gguf_bool(true)}};
  if (qwen25) {
    // llama.cpp keeps one period: every n-th block has full attention.
    const auto& full = c.fullatt_block_indexes;
    const int pattern = full.empty() ? 0 : full[0] + 1;
    for (size_t i = 0; i < full.size(); ++i) {
      if (full[i] != pattern * static_cast<int>(i + 1) - 1) {
        throw std::invalid_argument("mmproj: fullatt_block_indexes are not periodic");
      }
    }
    meta.push_back({"clip.vision.n_wa_pattern", gguf_u32(pattern)});
    meta.push_back({"clip.vision.window_size", gguf_u32(c.window_size)});
  }
  return meta;
}

}  // namespace

void write_mmproj_gguf(const std::string& path, const VisionEncoderConfig& c,
                       const VisionWeightSource& weights, DType dtype,
                       const Qwen2VLImageProcessorConfig& preprocessor) {
  MmprojWriter w{c, weights, dtype, {}};
  const int d = c.hidden_size, f = c.intermediate_size, p = c.patch_size;
  const int merged = d * c.spatial_merge_size * c.spatial_merge_size;
  const std::vector<float> patch = weights("patch_embed.proj.weight", size_t(c.patch_dim()) * d);
  const size_t pp = size_t(p) * p, t = c.temporal_patch_size;
  for (size_t frame = 0; frame < t; ++frame) {
    std::vector<float> part(patch.size() / t);
    for (size_t oc = 0; oc < part.size() / pp; ++oc)
      std::copy_n(&patch[(oc * t + frame) * pp], pp, &part[oc * pp]);
    w.add(frame == 0 ? "v.patch_embd.weight" : "v.patch_embd.weight." + std::to_string(frame),
          {d, c.in_channels, p, p}, std::move(part));
  }
  for (int i = 0; i < c.depth; ++i) {
    const std::string hf = "blocks." + std::to_string(i) + ".", g = block(i);
    w.norm(hf + "norm1", g + "ln1");
    w.norm(hf + "norm2", g + "ln2");
    const std::vector<float> qkv_w = weights(hf + "attn.qkv.weight", size_t(3) * d * d);
    const std::vector<float> qkv_b = weights(hf + "attn.qkv.bias", size_t(3) * d);
    for (int part = 0; part < 3; ++part) {
      const std::string name = g + "attn_" + "qkv"[part];
      w.add(name + ".weight", {d, d},
            {qkv_w.begin() + size_t(part) * d * d, qkv_w.begin() + size_t(part + 1) * d * d});
      w.add(name + ".bias", {d}, {qkv_b.begin() + part * d, qkv_b.begin() + (part + 1) * d});
    }
    w.linear(hf + "attn.proj", g + "attn_out", d, d);
    if (c.family == VisionFamily::kQwen2VL) {
      w.linear(hf + "mlp.fc1", g + "ffn_up", d, f);
      w.linear(hf + "mlp.fc2", g + "ffn_down", f, d);
    } else {
      w.linear(hf + "mlp.gate_proj", g + "ffn_gate", d, f);
      w.linear(hf + "mlp.up_proj", g + "ffn_up", d, f);
      w.linear(hf + "mlp.down_proj", g + "ffn_down", f, d);
    }
  }
  w.norm("merger.ln_q", "v.post_ln");
  w.linear("merger.mlp.0", "mm.0", merged, merged);
  w.linear("merger.mlp.2", "mm.2", merged, c.out_hidden_size);

  write_gguf(path, mmproj_metadata(c, preprocessor), w.tensors);
}

}  // namespace pagedllm
