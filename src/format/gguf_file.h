// A parsed GGUF file (v2 or v3): metadata key/values and tensor descriptors over a memory map.
// Every read is bounds-checked: corrupted bytes give a ModelLoadError, never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/mapped_file.h"
#include "format/tensor.h"

namespace pagedllm {

enum class GGUFType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

struct GGUFValue {
  GGUFType type = GGUFType::kUint8;
  GGUFType array_type = GGUFType::kUint8;  // element type when type == kArray
  int64_t i = 0;                           // integer and bool scalars
  double f = 0.0;                          // float scalars
  std::string s;                           // string scalar
  std::vector<int64_t> ints;               // integer and bool arrays
  std::vector<double> floats;              // float arrays
  std::vector<std::string> strings;        // string arrays

  bool is_integer() const;
  bool is_float() const { return type == GGUFType::kFloat32 || type == GGUFType::kFloat64; }
};

struct GGUFTensor {
  std::string name;
  uint32_t ggml_type = 0;
  std::vector<int64_t> dims;  // ne[0] (innermost, contiguous) first
  uint64_t offset = 0;        // from the start of the data section
  const uint8_t* data = nullptr;
  size_t size_bytes = 0;
};

class GGUFFile {
 public:
  explicit GGUFFile(const std::string& path);
  explicit GGUFFile(std::shared_ptr<MappedFile> file);

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  const std::map<std::string, GGUFValue>& metadata() const { return metadata_; }
  const GGUFValue* find(const std::string& key) const;
  const GGUFTensor* tensor(const std::string& name) const;
  const std::vector<GGUFTensor>& tensors() const { return tensors_; }
  std::shared_ptr<MappedFile> file() const { return file_; }

  // Typed accessors; throw ModelLoadError naming the key when it is absent or mistyped.
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::optional<int64_t> find_int(const std::string& key) const;
  std::optional<double> find_float(const std::string& key) const;

  static bool has_magic(const std::string& path);

 private:
  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  std::map<std::string, GGUFValue> metadata_;
  std::vector<GGUFTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// The storage type of a ggml type id, or nullopt if pagedllm cannot use it.
std::optional<DType> dtype_of_ggml_type(uint32_t ggml_type);
const char* ggml_type_name(uint32_t ggml_type);

}  // namespace pagedllm
