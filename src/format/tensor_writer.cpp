#include "format/tensor_writer.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "format/dequant.h"
#include "format/gguf_file.h"

namespace pagedllm {

int64_t TensorToWrite::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

GGUFValue gguf_string(std::string s) {
  GGUFValue v;
  v.type = GGUFType::kString;
  v.s = std::move(s);
  return v;
}
GGUFValue gguf_u32(uint32_t x) {
  GGUFValue v;
  v.type = GGUFType::kUint32;
  v.i = x;
  return v;
}
GGUFValue gguf_f32(float x) {
  GGUFValue v;
  v.type = GGUFType::kFloat32;
  v.f = x;
  return v;
}
GGUFValue gguf_bool(bool x) {
  GGUFValue v;
  v.type = GGUFType::kBool;
  v.i = x;
  return v;
}
GGUFValue gguf_string_array(std::vector<std::string> x) {
  GGUFValue v;
  v.type = GGUFType::kArray;
  v.array_type = GGUFType::kString;
  v.strings = std::move(x);
  return v;
}
GGUFValue gguf_f32_array(const std::vector<float>& x) {
  GGUFValue v;
  v.type = GGUFType::kArray;
  v.array_type = GGUFType::kFloat32;
  v.floats.assign(x.begin(), x.end());
  return v;
}
GGUFValue gguf_i32_array(const std::vector<int32_t>& x) {
  GGUFValue v;
  v.type = GGUFType::kArray;
  v.array_type = GGUFType::kInt32;
  v.ints.assign(x.begin(), x.end());
  return v;
}

// The inverse of the reader's mapping, so the two cannot drift apart.
uint32_t ggml_type_of(DType dtype) {
  for (uint32_t t = 0; t <= 30; ++t) {
    if (dtype_of_ggml_type(t) == dtype) return t;
  }
  throw std::invalid_argument(std::string("no GGUF type for ") + to_string(dtype));
}

namespace {

class Out {
 public:
  explicit Out(const std::string& path)
      : path_(path), f_(path, std::ios::binary | std::ios::trunc) {
    if (!f_) throw std::runtime_error("cannot write '" + path + "'");
  }
  template <typename T>
  void put(T v) {
    f_.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_bytes(const void* p, size_t n) {
    f_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    const auto pos = static_cast<uint64_t>(f_.tellp());
    const uint64_t target = (pos + alignment - 1) / alignment * alignment;
    for (uint64_t i = pos; i < target; ++i) put<uint8_t>(0);
  }
  void finish() {
    f_.flush();
    if (!f_) throw std::runtime_error("writing '" + path_ + "' failed");
  }

 private:
  std::string path_;
  std::ofstream f_;
};

void put_scalar(Out& o, GGUFType t, int64_t i, double f) {
  switch (t) {
    case GGUFType::kUint8:
    case GGUFType::kBool:
      o.put<uint8_t>(static_cast<uint8_t>(i));
      break;
    case GGUFType::kInt8:
      o.put<int8_t>(static_cast<int8_t>(i));
      break;
    case GGUFType::kUint16:
      o.put<uint16_t>(static_cast<uint16_t>(i));
      break;
    case GGUFType::kInt16:
      o.put<int16_t>(static_cast<int16_t>(i));
      break;
    case GGUFType::kUint32:
      o.put<uint32_t>(static_cast<uint32_t>(i));
      break;
    case GGUFType::kInt32:
      o.put<int32_t>(static_cast<int32_t>(i));
      break;
    case GGUFType::kUint64:
      o.put<uint64_t>(static_cast<uint64_t>(i));
      break;
    case GGUFType::kInt64:
      o.put<int64_t>(i);
      break;
    case GGUFType::kFloat32:
      o.put<float>(static_cast<float>(f));
      break;
    case GGUFType::kFloat64:
      o.put<double>(f);
      break;
    default:
      throw std::logic_error("not a scalar GGUF type");
  }
}

void put_value(Out& o, const GGUFValue& v) {
  o.put<uint32_t>(static_cast<uint32_t>(v.type));
  if (v.type == GGUFType::kString) {
    o.put_string(v.s);
  } else if (v.type == GGUFType::kArray) {
    o.put<uint32_t>(static_cast<uint32_t>(v.array_type));
    if (v.array_type == GGUFType::kString) {
      o.put<uint64_t>(v.strings.size());
      for (const auto& s : v.strings) o.put_string(s);
    } else if (v.array_type == GGUFType::kFloat32 || v.array_type == GGUFType::kFloat64) {
      o.put<uint64_t>(v.floats.size());
      for (double f : v.floats) put_scalar(o, v.array_type, 0, f);
    } else {
      o.put<uint64_t>(v.ints.size());
      for (int64_t i : v.ints) put_scalar(o, v.array_type, i, 0.0);
    }
  } else {
    put_scalar(o, v.type, v.i, v.f);
  }
}

size_t encoded_bytes(const TensorToWrite& t) {
  const int64_t cols = t.shape.back();
  return row_bytes(t.dtype, cols) * static_cast<size_t>(t.elements() / cols);
}

void put_tensor_data(Out& o, const TensorToWrite& t) {
  std::vector<float> values(static_cast<size_t>(t.elements()));
  t.produce(values);
  std::vector<uint8_t> encoded(encoded_bytes(t));
  const int64_t cols = t.shape.back();
  const size_t rb = row_bytes(t.dtype, cols);
  for (int64_t r = 0; r < t.elements() / cols; ++r) {
    quantize_row(t.dtype, values.data() + r * cols, encoded.data() + static_cast<size_t>(r) * rb,
                 cols);
  }
  o.put_bytes(encoded.data(), encoded.size());
}

}  // namespace

void write_gguf(const std::string& path, const std::vector<GGUFMetadataEntry>& metadata,
                const std::vector<TensorToWrite>& tensors,
                const std::function<void(size_t, size_t)>& progress) {
  constexpr uint64_t kAlignment = 32;
  Out o(path);
  o.put_bytes("GGUF", 4);
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors.size());
  o.put<uint64_t>(metadata.size() + 1);
  for (const auto& m : metadata) {
    o.put_string(m.key);
    put_value(o, m.value);
  }
  o.put_string("general.alignment");
  put_value(o, gguf_u32(kAlignment));
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    o.put_string(t.name);
    o.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
      o.put<uint64_t>(static_cast<uint64_t>(*it));
    o.put<uint32_t>(ggml_type_of(t.dtype));
    o.put<uint64_t>(offset);
    offset += (encoded_bytes(t) + kAlignment - 1) / kAlignment * kAlignment;
  }
  o.pad_to(kAlignment);
  for (size_t i = 0; i < tensors.size(); ++i) {
    put_tensor_data(o, tensors[i]);
    o.pad_to(kAlignment);
    if (progress) progress(i + 1, tensors.size());
  }
  o.finish();
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::function<void(size_t, size_t)>& progress) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16) {
      throw std::invalid_argument("safetensors holds F32, F16 or BF16, not " +
                                  std::string(to_string(t.dtype)));
    }
    const uint64_t n = encoded_bytes(t);
    header[t.name] = {
        {"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';
  Out o(path);
  o.put<uint64_t>(text.size());
  o.put_bytes(text.data(), text.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    put_tensor_data(o, tensors[i]);
    if (progress) progress(i + 1, tensors.size());
  }
  o.finish();
}

}  // namespace pagedllm
