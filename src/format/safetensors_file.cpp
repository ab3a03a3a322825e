#include "format/safetensors_file.h"

#include <cstring>

#include <nlohmann/json.hpp>

namespace pagedllm {

std::optional<DType> dtype_of_safetensors(const std::string& d) {
  if (d == "F32") return DType::kF32;
  if (d == "F16") return DType::kF16;
  if (d == "BF16") return DType::kBF16;
  return std::nullopt;
}

namespace {

size_t element_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path)
    : SafetensorsFile(std::make_shared<MappedFile>(path)) {}

SafetensorsFile::SafetensorsFile(std::shared_ptr<MappedFile> file) : file_(std::move(file)) {
  const std::string& path = file_->path();
  auto fail = [&](const std::string& what) {
    throw ModelLoadError(path + ": invalid safetensors: " + what);
  };
  if (file_->size() < 8) fail("shorter than its 8-byte header length");
  uint64_t header_len;
  std::memcpy(&header_len, file_->data(), 8);
  if (header_len > file_->size() - 8) fail("header length runs past the end of the file");
  const auto* begin = reinterpret_cast<const char*>(file_->data() + 8);
  const auto header = nlohmann::json::parse(begin, begin + header_len, nullptr, false);
  if (header.is_discarded() || !header.is_object()) fail("header is not a JSON object");
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_->size() - data_start;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    if (!info.is_object() || !info.contains("dtype") || !info["dtype"].is_string() ||
        !info.contains("shape") || !info["shape"].is_array() || !info.contains("data_offsets") ||
        !info["data_offsets"].is_array() || info["data_offsets"].size() != 2) {
      fail("tensor '" + name + "' needs dtype, shape and two data_offsets");
    }
    SafetensorsTensor t;
    t.name = name;
    t.dtype = info["dtype"].get<std::string>();
    const size_t esize = element_size(t.dtype);
    if (esize == 0) fail("tensor '" + name + "' has unknown dtype " + t.dtype);
    uint64_t elements = 1;
    for (const auto& d : info["shape"]) {
      if (!d.is_number_unsigned()) fail("tensor '" + name + "' has a bad shape");
      const auto v = d.get<uint64_t>();
      if (v != 0 && elements > (uint64_t{1} << 40) / v)
        fail("tensor '" + name + "' is implausibly large");
      elements *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    const auto& offs = info["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      fail("bad data_offsets for '" + name + "'");
    const auto lo = offs[0].get<uint64_t>(), hi = offs[1].get<uint64_t>();
    if (lo > hi || hi > data_size) {
      throw ModelLoadError(path + ": tensor '" + name + "' lies outside the file (truncated?)");
    }
    if (hi - lo != elements * esize)
      fail("tensor '" + name + "' byte size does not match its shape");
    t.data = file_->data() + data_start + lo;
    t.size_bytes = hi - lo;
    tensors_.emplace(name, std::move(t));
  }
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace pagedllm
