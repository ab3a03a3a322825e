#include "format/gguf_file.h"

#include <cstring>
#include <fstream>

namespace pagedllm {

namespace {

constexpr uint64_t kMaxStringBytes = 1 << 24;
constexpr uint64_t kMaxDims = 4;

// Sequential, bounds-checked reads over the mapped bytes.
class Reader {
 public:
  Reader(const MappedFile& f) : f_(f) {}

  size_t pos() const { return pos_; }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, f_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string read_string(const char* what) {
    const auto n = read<uint64_t>(what);
    if (n > kMaxStringBytes)
      fail(std::string(what) + ": string length " + std::to_string(n) + " is implausible");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(f_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelLoadError(f_.path() + ": invalid GGUF at byte " + std::to_string(pos_) + ": " +
                         what);
  }
  void need(uint64_t n, const char* what) const {
    if (n > f_.size() - pos_) fail(std::string("truncated while reading ") + what);
  }

 private:
  const MappedFile& f_;
  size_t pos_ = 0;
};

size_t scalar_size(GGUFType t) {
  switch (t) {
    case GGUFType::kUint8:
    case GGUFType::kInt8:
    case GGUFType::kBool:
      return 1;
    case GGUFType::kUint16:
    case GGUFType::kInt16:
      return 2;
    case GGUFType::kUint32:
    case GGUFType::kInt32:
    case GGUFType::kFloat32:
      return 4;
    case GGUFType::kUint64:
    case GGUFType::kInt64:
    case GGUFType::kFloat64:
      return 8;
    default:
      return 0;
  }
}

bool is_int_type(GGUFType t) {
  return t != GGUFType::kFloat32 && t != GGUFType::kFloat64 && scalar_size(t) != 0;
}

int64_t read_int_scalar(Reader& r, GGUFType t) {
  switch (t) {
    case GGUFType::kUint8:
      return r.read<uint8_t>("u8");
    case GGUFType::kInt8:
      return r.read<int8_t>("i8");
    case GGUFType::kBool:
      return r.read<uint8_t>("bool") != 0;
    case GGUFType::kUint16:
      return r.read<uint16_t>("u16");
    case GGUFType::kInt16:
      return r.read<int16_t>("i16");
    case GGUFType::kUint32:
      return r.read<uint32_t>("u32");
    case GGUFType::kInt32:
      return r.read<int32_t>("i32");
    case GGUFType::kUint64:
      return static_cast<int64_t>(r.read<uint64_t>("u64"));
    case GGUFType::kInt64:
      return r.read<int64_t>("i64");
    default:
      r.fail("not an integer type");
  }
}

double read_float_scalar(Reader& r, GGUFType t) {
  return t == GGUFType::kFloat32 ? r.read<float>("f32") : r.read<double>("f64");
}

GGUFType read_type(Reader& r, const char* what) {
  const auto t = r.read<uint32_t>(what);
  if (t > static_cast<uint32_t>(GGUFType::kFloat64))
    r.fail("unknown value type " + std::to_string(t));
  return static_cast<GGUFType>(t);
}

GGUFValue read_value(Reader& r, GGUFType type) {
  GGUFValue v;
  v.type = type;
  if (type == GGUFType::kString) {
    v.s = r.read_string("string value");
  } else if (type == GGUFType::kArray) {
    v.array_type = read_type(r, "array type");
    const auto n = r.read<uint64_t>("array length");
    if (v.array_type == GGUFType::kArray) r.fail("nested arrays are not supported");
    if (n > (uint64_t{1} << 32)) r.fail("implausible array length " + std::to_string(n));
    // Every element takes at least one byte: a larger count is corrupt.
    const uint64_t min_size = v.array_type == GGUFType::kString ? 8 : scalar_size(v.array_type);
    r.need(n * min_size, "array");
    for (uint64_t i = 0; i < n; ++i) {
      if (v.array_type == GGUFType::kString) {
        v.strings.push_back(r.read_string("array string"));
      } else if (is_int_type(v.array_type)) {
        v.ints.push_back(read_int_scalar(r, v.array_type));
      } else {
        v.floats.push_back(read_float_scalar(r, v.array_type));
      }
    }
  } else if (is_int_type(type)) {
    v.i = read_int_scalar(r, type);
  } else {
    v.f = read_float_scalar(r, type);
  }
  return v;
}

}  // namespace

bool GGUFValue::is_integer() const {
  return type != GGUFType::kArray && is_int_type(type);
}

std::optional<DType> dtype_of_ggml_type(uint32_t t) {
  switch (t) {
    case 0:
      return DType::kF32;
    case 1:
      return DType::kF16;
    case 2:
      return DType::kQ4_0;
    case 3:
      return DType::kQ4_1;
    case 6:
      return DType::kQ5_0;
    case 7:
      return DType::kQ5_1;
    case 8:
      return DType::kQ8_0;
    case 10:
      return DType::kQ2_K;
    case 11:
      return DType::kQ3_K;
    case 12:
      return DType::kQ4_K;
    case 13:
      return DType::kQ5_K;
    case 14:
      return DType::kQ6_K;
    case 20:
      return DType::kIQ4_NL;
    case 23:
      return DType::kIQ4_XS;
    case 30:
      return DType::kBF16;
    default:
      return std::nullopt;
  }
}

const char* ggml_type_name(uint32_t t) {
  static const char* names[] = {"F32",   "F16",   "Q4_0",    "Q4_1",   "?",       "?",     "Q5_0",
                                "Q5_1",  "Q8_0",  "Q8_1",    "Q2_K",   "Q3_K",    "Q4_K",  "Q5_K",
                                "Q6_K",  "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                                "IQ3_S", "IQ2_S", "IQ4_XS",  "I8",     "I16",     "I32",   "I64",
                                "F64",   "IQ1_M", "BF16"};
  if (t < std::size(names)) return names[t];
  return "unknown";
}

bool GGUFFile::has_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

GGUFFile::GGUFFile(const std::string& path) : GGUFFile(std::make_shared<MappedFile>(path)) {}

GGUFFile::GGUFFile(std::shared_ptr<MappedFile> file) : file_(std::move(file)) {
  Reader r(*file_);
  const auto magic = r.read<uint32_t>("magic");
  if (std::memcmp(&magic, "GGUF", 4) != 0) r.fail("wrong magic (not a GGUF file)");
  version_ = r.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3)
    r.fail("unsupported version " + std::to_string(version_) + " (expected 2 or 3)");
  const auto n_tensors = r.read<uint64_t>("tensor count");
  const auto n_kv = r.read<uint64_t>("metadata count");
  if (n_tensors > (1u << 20) || n_kv > (1u << 20)) r.fail("implausible tensor or metadata count");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.read_string("metadata key");
    const GGUFType type = read_type(r, "metadata type");
    metadata_[key] = read_value(r, type);
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GGUFTensor t;
    t.name = r.read_string("tensor name");
    const auto n_dims = r.read<uint32_t>("tensor dims");
    if (n_dims == 0 || n_dims > kMaxDims)
      r.fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions");
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = r.read<uint64_t>("tensor dim");
      if (dim == 0 || dim > (1ULL << 32))
        r.fail("tensor '" + t.name + "' has an invalid dimension");
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    t.ggml_type = r.read<uint32_t>("tensor type");
    t.offset = r.read<uint64_t>("tensor offset");
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  int64_t alignment = 32;
  if (auto a = find_int("general.alignment")) alignment = *a;
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    r.fail("general.alignment must be a power of two");
  const uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  for (auto& t : tensors_) {
    const auto dtype = dtype_of_ggml_type(t.ggml_type);
    int64_t elements = 1;
    for (int64_t d : t.dims) {
      if (elements > (int64_t{1} << 40) / d) r.fail("tensor '" + t.name + "' is implausibly large");
      elements *= d;
    }
    if (dtype) {
      if (t.dims[0] % block_elements(*dtype) != 0) {
        r.fail("tensor '" + t.name + "' row length is not a multiple of its block size");
      }
      t.size_bytes = row_bytes(*dtype, t.dims[0]) * static_cast<size_t>(elements / t.dims[0]);
    }
    if (t.offset > file_->size() || data_start > file_->size() - t.offset ||
        t.size_bytes > file_->size() - data_start - t.offset) {
      throw ModelLoadError(file_->path() + ": tensor '" + t.name +
                           "' lies outside the file (truncated?)");
    }
    t.data = file_->data() + data_start + t.offset;
  }
}

const GGUFValue* GGUFFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GGUFTensor* GGUFFile::tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<int64_t> GGUFFile::find_int(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer())
    throw ModelLoadError(path() + ": metadata '" + key + "' must be an integer");
  return v->i;
}

std::optional<double> GGUFFile::find_float(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->is_integer()) return static_cast<double>(v->i);
  throw ModelLoadError(path() + ": metadata '" + key + "' must be a number");
}

int64_t GGUFFile::get_int(const std::string& key) const {
  auto v = find_int(key);
  if (!v) throw ModelLoadError(path() + ": missing metadata '" + key + "'");
  return *v;
}

double GGUFFile::get_float(const std::string& key) const {
  auto v = find_float(key);
  if (!v) throw ModelLoadError(path() + ": missing metadata '" + key + "'");
  return *v;
}

std::string GGUFFile::get_string(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) throw ModelLoadError(path() + ": missing metadata '" + key + "'");
  if (v->type != GGUFType::kString)
    throw ModelLoadError(path() + ": metadata '" + key + "' must be a string");
  return v->s;
}

}  // namespace pagedllm
