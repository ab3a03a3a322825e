// The image half of a vision-language model (Qwen2-VL, Qwen2.5-VL): the vision encoder and the
// settings that turn an image into prompt tokens and positions. The language model is an
// ordinary Model; the worker runs this beside it and hands its output to the model as input
// embeddings (ModelInputs::embed_rows), as vLLM's get_input_embeddings does.
#pragma once

#include <memory>
#include <string>

#include "multimodal/mrope.h"
#include "multimodal/qwen2vl_image_processor.h"
#include "multimodal/vision_encoder.h"

namespace pagedllm {

struct VisionModel {
  std::unique_ptr<VisionEncoder> encoder;
  MropeConfig mrope;
  Qwen2VLImageProcessorConfig processor;
  std::string source;  // where the encoder came from, for logs
};

// True when an HF directory's config.json describes a Qwen2-VL-family model.
bool has_vision_config(const std::string& model_path);

// The vision part of an HF directory (config.json with vision_config, `visual.*` tensors in its
// safetensors files, preprocessor_config.json), or of llama.cpp's projector file `mmproj` for a
// GGUF language model. Null when the model has none and no mmproj is given. Throws
// ModelLoadError naming what is missing or inconsistent.
std::shared_ptr<const VisionModel> load_vision_model(const std::string& model_path,
                                                     const std::string& mmproj);

}  // namespace pagedllm
