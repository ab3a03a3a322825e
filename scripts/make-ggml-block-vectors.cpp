// Reference vectors for GGUF block-quantization formats, made by llama.cpp's own ggml library.
//
// For each type below, three rows of 256 floats from a fixed-seed generator are quantized with
// ggml_quantize_chunk (no importance matrix) and the bytes are dequantized with the type's
// to_float. The program prints one JSON document to stdout: per type, the quantized bytes
// (data_hex) and the IEEE-754 bit patterns of the dequantized floats (values_bits), so that
// pagedllm's decoders can be checked bit for bit against llama.cpp's.
//
// Inputs (reproducible without llama.cpp; see scripts/make-ggml-block-vectors.sh):
//   generator: splitmix64, seed 0x5eedb10c, one stream for all rows in order;
//     uniform() = (next() >> 11) * 2^-53 in [0, 1);
//     normal()  = sqrt(-2 ln(1 - u1)) * cos(6.283185307179586 * u2), u1 then u2 uniform(), in
//     double.
//   row 0: float(normal())
//   row 1: float(normal() * 0.02), then +3 at 7 and 133, -3 at 70 and 250
//   row 2: i < 128: float(-1 + uniform()) in [-1, 0); i >= 128: float(0.5 + 1.5 * uniform()) in
//   [0.5, 2)
//
// Usage: make-ggml-block-vectors LLAMA_CPP_COMMIT > ggml_block_vectors.json
#include "ggml.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int64_t kNPerRow = 256;
constexpr int64_t kRows = 3;

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

std::vector<float> make_inputs() {
  std::vector<float> x(kRows * kNPerRow);
  SplitMix64 rng{0x5eedb10cULL};
  float* r0 = x.data();
  float* r1 = r0 + kNPerRow;
  float* r2 = r1 + kNPerRow;
  for (int64_t i = 0; i < kNPerRow; ++i) r0[i] = static_cast<float>(rng.normal());
  for (int64_t i = 0; i < kNPerRow; ++i) r1[i] = static_cast<float>(rng.normal() * 0.02);
  r1[7] = 3.0f;
  r1[70] = -3.0f;
  r1[133] = 3.0f;
  r1[250] = -3.0f;
  for (int64_t i = 0; i < kNPerRow; ++i) {
    r2[i] = i < kNPerRow / 2 ? static_cast<float>(-1.0 + rng.uniform())
                             : static_cast<float>(0.5 + 1.5 * rng.uniform());
  }
  return x;
}

// ggml's type names are lowercase ("q4_k"); the JSON uses the upper-case spelling ("Q4_K").
std::string upper_name(ggml_type type) {
  std::string s = ggml_type_name(type);
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

std::string hex_bytes(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}

std::string hex_float_bits(const std::vector<float>& v) {
  std::string s;
  s.reserve(8 * v.size());
  char buf[9];
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    std::snprintf(buf, sizeof buf, "%08x", bits);
    s += buf;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LLAMA_CPP_COMMIT\n", argv[0]);
    return 2;
  }
  const ggml_type types[] = {
      GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,   GGML_TYPE_Q5_1,
      GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,
      GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
  };
  const std::vector<float> src = make_inputs();

  std::printf("{\"generator\": \"scripts/make-ggml-block-vectors.cpp with llama.cpp %s\", ",
              argv[1]);
  std::printf("\"n_per_row\": %lld, \"rows\": %lld,\n \"types\": [\n",
              static_cast<long long>(kNPerRow), static_cast<long long>(kRows));
  bool first = true;
  for (ggml_type type : types) {
    if (ggml_quantize_requires_imatrix(type)) {
      std::fprintf(stderr, "%s requires an importance matrix\n", ggml_type_name(type));
      return 1;
    }
    const ggml_type_traits* traits = ggml_get_type_traits(type);
    const int64_t block_elements = ggml_blck_size(type);
    const size_t block_bytes = ggml_type_size(type);
    if (traits->to_float == nullptr || kNPerRow % block_elements != 0) {
      std::fprintf(stderr, "%s: no to_float or bad block size\n", ggml_type_name(type));
      return 1;
    }
    const size_t n_bytes = static_cast<size_t>(kRows * kNPerRow / block_elements) * block_bytes;
    std::vector<uint8_t> data(n_bytes);
    ggml_quantize_init(type);
    const size_t written =
        ggml_quantize_chunk(type, src.data(), data.data(), 0, kRows, kNPerRow, nullptr);
    if (written != n_bytes) {
      std::fprintf(stderr, "%s: quantize wrote %zu bytes, expected %zu\n", ggml_type_name(type),
                   written, n_bytes);
      return 1;
    }
    std::vector<float> values(kRows * kNPerRow);
    traits->to_float(data.data(), values.data(), kRows * kNPerRow);

    std::printf(
        "%s  {\"name\": \"%s\", \"ggml_type\": %d, \"block_elements\": %lld, \"block_bytes\": "
        "%zu,\n",
        first ? "" : ",\n", upper_name(type).c_str(), static_cast<int>(type),
        static_cast<long long>(block_elements), block_bytes);
    std::printf("   \"data_hex\": \"%s\",\n", hex_bytes(data.data(), data.size()).c_str());
    std::printf("   \"values_bits\": \"%s\"}", hex_float_bits(values).c_str());
    first = false;
  }
  std::printf("\n ]}\n");
  ggml_quantize_free();
  return 0;
}
