// A parsed .safetensors file: an 8-byte header length, a JSON header of
// {name: {dtype, shape, data_offsets}}, then the raw data, used in place from a memory map.
// Every offset and shape is checked against the file; bad bytes give a ModelLoadError.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/mapped_file.h"
#include "format/tensor.h"

namespace pagedllm {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // as written: F32, F16, BF16, ...
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t size_bytes = 0;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  explicit SafetensorsFile(std::shared_ptr<MappedFile> file);
  const std::string& path() const { return file_->path(); }
  const SafetensorsTensor* find(const std::string& name) const;
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  std::shared_ptr<MappedFile> file() const { return file_; }

 private:
  std::shared_ptr<MappedFile> file_;
  std::map<std::string, SafetensorsTensor> tensors_;
};

// The storage type of a safetensors dtype string, or nullopt if unsupported.
std::optional<DType> dtype_of_safetensors(const std::string& dtype);

}  // namespace pagedllm
