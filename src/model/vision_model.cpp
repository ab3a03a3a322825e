#include "model/vision_model.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "format/gguf_file.h"
#include "format/mapped_file.h"
#include "format/safetensors_file.h"
#include "kernels/cpu/cpu_features.h"
#include "multimodal/vision_gguf.h"

namespace pagedllm {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_config(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "config.json");
  json config = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object())
    throw ModelLoadError(dir + "/config.json is not a JSON object");
  return config;
}

// The safetensors files of a directory that hold the encoder, with the prefix its tensors carry
// ("visual." on the Hub, "model.visual." as newer transformers save them).
struct VisionShards {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::string prefix;
};

VisionShards open_vision_shards(const std::string& dir) {
  VisionShards shards;
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".safetensors") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    auto file = std::make_unique<SafetensorsFile>(p.string());
    bool has_vision = false;
    for (const char* prefix : {"visual.", "model.visual."}) {
      if (file->find(std::string(prefix) + "patch_embed.proj.weight") ||
          file->find(std::string(prefix) + "blocks.0.norm1.weight")) {
        shards.prefix = prefix;
        has_vision = true;
      }
    }
    if (has_vision || !shards.prefix.empty()) shards.files.push_back(std::move(file));
  }
  if (shards.files.empty())
    throw ModelLoadError(dir + ": no safetensors file holds the vision encoder (visual.*)");
  return shards;
}

// Looks each tensor up in whichever shard holds it.
VisionWeightSource sharded_source(const VisionShards& shards) {
  std::vector<VisionWeightSource> sources;
  for (const auto& f : shards.files)
    sources.push_back(safetensors_vision_weights(*f, shards.prefix));
  return [&shards, sources](const std::string& name, size_t elements) {
    for (size_t i = 0; i < shards.files.size(); ++i) {
      if (shards.files[i]->find(shards.prefix + name)) return sources[i](name, elements);
    }
    throw ModelLoadError("vision weights: missing tensor " + shards.prefix + name);
  };
}

// A checkpoint stored in 16-bit floats runs its matrix products in bf16, as HF runs such a
// checkpoint (twice the arithmetic rate on AVX512-BF16 and AMX); f32 checkpoints stay exact.
// A q8_0 projector runs int8 products, as llama.cpp runs it, on AVX2 and up: with the
// vpmaddubsw tile they are as fast there as widened bf16 products at half the memory
// (bench_image, 4 blocks of the 3B tower on 448 x 448 forced to AVX2: int8 1335-1428 ms, bf16
// products 1404 ms; before that tile, 1832 against 1519). Only the generic path widens to bf16.
DType matmul_dtype_for(std::optional<DType> stored) {
  if (stored == DType::kQ8_0)
    return cpu::active_isa() >= cpu::Isa::kAvx2 ? DType::kQ8_0 : DType::kBF16;
  return stored == DType::kBF16 || stored == DType::kF16 ? DType::kBF16 : DType::kF32;
}

std::optional<DType> stored_dtype(const VisionShards& shards) {
  for (const auto& f : shards.files) {
    if (const SafetensorsTensor* t = f->find(shards.prefix + "blocks.0.attn.qkv.weight"))
      return dtype_of_safetensors(t->dtype);
  }
  return std::nullopt;
}

std::shared_ptr<VisionModel> load_from_hf(const std::string& dir) {
  const json config = read_config(dir);
  auto vm = std::make_shared<VisionModel>();
  try {
    vm->mrope = MropeConfig::from_hf_config(config);
    VisionEncoderConfig vc = VisionEncoderConfig::from_hf_config(config);
    const bool has_processor = fs::exists(fs::path(dir) / "preprocessor_config.json");
    if (has_processor) vm->processor = Qwen2VLImageProcessorConfig::from_file(dir);
    vm->processor.patch_size = vc.patch_size;
    vm->processor.temporal_patch_size = vc.temporal_patch_size;
    vm->processor.merge_size = vc.spatial_merge_size;
    const VisionShards shards = open_vision_shards(dir);
    vc.matmul_dtype = matmul_dtype_for(stored_dtype(shards));
    vm->encoder = std::make_unique<VisionEncoder>(vc, sharded_source(shards));
  } catch (const std::invalid_argument& e) {
    throw ModelLoadError(dir + ": " + e.what());
  }
  vm->source = dir;
  return vm;
}

std::array<float, 3> three_floats(const GGUFFile& file, const std::string& key,
                                  std::array<float, 3> fallback) {
  const GGUFValue* v = file.find(key);
  if (!v || v->floats.size() != 3) return fallback;
  return {static_cast<float>(v->floats[0]), static_cast<float>(v->floats[1]),
          static_cast<float>(v->floats[2])};
}

std::shared_ptr<VisionModel> load_from_mmproj(const std::string& path) {
  auto file = std::make_shared<GGUFFile>(path);
  auto vm = std::make_shared<VisionModel>();
  try {
    VisionEncoderConfig vc = vision_config_from_mmproj(*file);
    if (const GGUFTensor* t = file->tensor("v.blk.0.attn_q.weight"))
      vc.matmul_dtype = matmul_dtype_for(dtype_of_ggml_type(t->ggml_type));
    vm->mrope.variant =
        vc.family == VisionFamily::kQwen25VL ? MropeVariant::kQwen25VL : MropeVariant::kQwen2VL;
    vm->mrope.spatial_merge_size = vc.spatial_merge_size;
    vm->processor.patch_size = vc.patch_size;
    vm->processor.temporal_patch_size = vc.temporal_patch_size;
    vm->processor.merge_size = vc.spatial_merge_size;
    vm->processor.image_mean =
        three_floats(*file, "clip.vision.image_mean", vm->processor.image_mean);
    vm->processor.image_std = three_floats(*file, "clip.vision.image_std", vm->processor.image_std);
    vm->encoder = std::make_unique<VisionEncoder>(vc, mmproj_vision_weights(*file));
  } catch (const std::invalid_argument& e) {
    throw ModelLoadError(path + ": " + e.what());
  }
  vm->source = path;
  return vm;
}

}  // namespace

bool has_vision_config(const std::string& model_path) {
  if (!fs::is_directory(model_path) || !fs::exists(fs::path(model_path) / "config.json"))
    return false;
  const json config = read_config(model_path);
  return config.contains("vision_config");
}

std::shared_ptr<const VisionModel> load_vision_model(const std::string& model_path,
                                                     const std::string& mmproj) {
  if (!mmproj.empty()) return load_from_mmproj(mmproj);
  if (has_vision_config(model_path)) return load_from_hf(model_path);
  return nullptr;
}

}  // namespace pagedllm
