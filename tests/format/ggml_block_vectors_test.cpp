// pagedllm's decoders against llama.cpp's own: tests/format/data/ggml_block_vectors.json holds
// three rows of 256 floats per block format as llama.cpp's ggml quantized them, with the floats
// its to_float decoded from those bytes (scripts/make-ggml-block-vectors.sh made it).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/block_quant.h"
#include "format/dequant.h"
#include "format/gguf_file.h"

namespace pagedllm {
namespace {

nlohmann::json load_vectors() {
  std::ifstream in(std::string(PAGEDLLM_SOURCE_DIR) + "/tests/format/data/ggml_block_vectors.json");
  return nlohmann::json::parse(in);
}

std::vector<uint8_t> bytes_of_hex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::vector<float> floats_of_bits(const std::string& hex) {
  std::vector<float> out(hex.size() / 8);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] =
        std::bit_cast<float>(static_cast<uint32_t>(std::stoul(hex.substr(8 * i, 8), nullptr, 16)));
  return out;
}

TEST(GgmlBlockVectors, EveryFormatDecodesBitForBitAsLlamaCppDoes) {
  const nlohmann::json v = load_vectors();
  const int n = v.at("n_per_row"), rows = v.at("rows");
  ASSERT_EQ(v.at("types").size(), 12u);
  for (const auto& t : v.at("types")) {
    const std::string name = t.at("name");
    SCOPED_TRACE(name);
    const auto dtype = dtype_of_ggml_type(t.at("ggml_type"));
    ASSERT_TRUE(dtype.has_value());
    EXPECT_EQ(to_string(*dtype), name);
    EXPECT_EQ(block_elements(*dtype), t.at("block_elements").get<int>());
    EXPECT_EQ(block_bytes(*dtype), t.at("block_bytes").get<size_t>());
    const std::vector<uint8_t> data = bytes_of_hex(t.at("data_hex"));
    const std::vector<float> expected = floats_of_bits(t.at("values_bits"));
    ASSERT_EQ(data.size(), row_bytes(*dtype, n) * rows);
    ASSERT_EQ(expected.size(), static_cast<size_t>(n * rows));
    std::vector<float> decoded(expected.size());
    for (int r = 0; r < rows; ++r)
      dequantize_row(*dtype, data.data() + row_bytes(*dtype, n) * r, decoded.data() + n * r, n);
    int mismatches = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (std::bit_cast<uint32_t>(decoded[i]) != std::bit_cast<uint32_t>(expected[i])) {
        if (++mismatches <= 3)
          ADD_FAILURE() << "element " << i << ": " << decoded[i] << " vs " << expected[i];
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

// Our encoder on values llama.cpp's grid can hold: for the blocks of 32 and Q2_K it finds that
// grid again (the same floats back), for the other k-quants it comes within a step or so.
TEST(GgmlBlockVectors, OurEncodingOfLlamaCppsDecodedRowsFindsTheirGrid) {
  const nlohmann::json v = load_vectors();
  const int n = v.at("n_per_row");
  for (const auto& t : v.at("types")) {
    const DType dtype = *dtype_of_ggml_type(t.at("ggml_type"));
    SCOPED_TRACE(to_string(dtype));
    const std::vector<float> x = floats_of_bits(t.at("values_bits"));
    std::vector<uint8_t> bytes(row_bytes(dtype, n));
    std::vector<float> back(static_cast<size_t>(n));
    quantize_row(dtype, x.data(), bytes.data(), n);
    dequantize_row(dtype, bytes.data(), back.data(), n);
    float amax = 0.0f, worst = 0.0f;
    for (int i = 0; i < n; ++i) {
      amax = std::max(amax, std::fabs(x[i]));
      worst = std::max(worst, std::fabs(x[i] - back[i]));
    }
    const bool exact = block_elements(dtype) == 32 || dtype == DType::kQ2_K;
    EXPECT_LE(worst, exact ? 0.0f : 0.12f * amax);
  }
}

}  // namespace
}  // namespace pagedllm
