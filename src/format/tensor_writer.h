// Writing model files: GGUF (for llama.cpp and pagedllm alike) and safetensors (Hugging Face).
// Tensors are produced one at a time, so a large model never has to fit in memory twice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf_file.h"
#include "format/tensor.h"

namespace pagedllm {

struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first ([rows, cols] for a matrix)
  DType dtype = DType::kF32;
  // Fills every element as f32 (shape product values); converted to dtype on write.
  std::function<void(std::vector<float>&)> produce;

  int64_t elements() const;
};

struct GGUFMetadataEntry {
  std::string key;
  GGUFValue value;
};

// Helpers to build metadata values.
GGUFValue gguf_string(std::string s);
GGUFValue gguf_u32(uint32_t v);
GGUFValue gguf_f32(float v);
GGUFValue gguf_bool(bool v);
GGUFValue gguf_string_array(std::vector<std::string> v);
GGUFValue gguf_f32_array(const std::vector<float>& v);
GGUFValue gguf_i32_array(const std::vector<int32_t>& v);

// progress(done, total) is called after each tensor when given.
void write_gguf(const std::string& path, const std::vector<GGUFMetadataEntry>& metadata,
                const std::vector<TensorToWrite>& tensors,
                const std::function<void(size_t, size_t)>& progress = {});
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::function<void(size_t, size_t)>& progress = {});

uint32_t ggml_type_of(DType dtype);

}  // namespace pagedllm
