// Linear-layer weights re-laid out once at load for the GEMM kernels: panels of 16 output
// features, each panel [K][16] (so 16 outputs are one vector). The last panel is zero-padded.
// Storage by source type:
//   F32, F16  -> f32 elements
//   BF16      -> bf16 elements in k pairs, [K/2][16][2]: one 32-bit lane holds k = 2i (low half)
//                and 2i + 1 of one output, what vdpbf16ps multiplies (a zero pads an odd K).
//                Denormals are flushed to zero at packing, as vdpbf16ps reads them.
//   block formats -> u8 codes (code + code_offset(), so that they feed VNNI's u8 x s8 dot
//                product) laid out [K/4][16][4]: four consecutive k of one output are one 32-bit
//                lane. Where every code fits in 4 bits (Q4_0, Q4_K), two are packed per byte
//                to halve the bytes decode reads: the 64 bytes of k-groups 2g and 2g+1 are one
//                line whose low nibbles are group 2g and high nibbles group 2g+1, so that a
//                mask and a shift turn one line into two u8 lines. Where every code fits in
//                5 bits (Q5_K; Q4_K stacked with Q4_0, whose offset 8 lifts its codes to 23),
//                each 32 k are a 320-byte chunk: four such nibble lines, then one line whose
//                byte holds the top bit of that lane's code in k-group g of the chunk at bit g
//                (a Q5_K decode step reads the file's 5.5 bits a weight, not 6.5). Where every
//                code fits in 6 bits (Q6_K, and Q4_K_M's mixes of Q4_K or Q5_K and Q6_K), each
//                16 k are a 192-byte chunk: two nibble lines, then one line whose byte holds the
//                top 2 bits of that lane's code in k-groups 0..3 of the chunk at bits 0, 2, 4, 6.
//                Where every code fits in 2 bits (Q2_K), each 16 k are one 64-byte line whose
//                byte holds that lane's codes of k-groups 0..3 at bits 0, 2, 4, 6 (the 6-bit
//                layout's line of top bits, alone).
//                IQ4_NL and IQ4_XS (alone or stacked with each other) store the 4-bit index
//                of each weight's level in the nibble layout, and the kernels turn indices into
//                the u8 codes level + 128 with one table shuffle (kIq4Codes): half the bytes of
//                8-bit codes, a little over the file's 4.25 or 4.5 bits a weight.
//                Scales are kept factored as in the file (block_quant.h's BlockFactors): per
//                (super-block, output) an f16 d, and per (sub-block, output) an int8 factor, so
//                scale = f32(d) * factor, exactly the reference's f32 scale at a fraction of
//                its bytes; mins (Q4_K, Q5_K) likewise with an f16 dmin and a u8 factor. A
//                weight is exactly scale * (u - code_offset()) - min. Stacked formats with
//                different block shapes share the finest sub-block and super-block.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "format/tensor.h"
#include "util/huge_pages.h"

namespace pagedllm::cpu {

enum class PanelStorage { kF32, kBF16, kInt8 };

// IQ4's levels as stored u8 codes (level + 128, the code offset of 8-bit codes), what a table
// shuffle of a stored 4-bit index gives.
inline constexpr uint8_t kIq4Codes[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                          129, 141, 153, 166, 181, 197, 217, 241};

class PackedMatrix {
 public:
  static constexpr int kPanel = 16;

  PackedMatrix() = default;
  // Several matrices with the same K and storage class are stacked along N (fused QKV, fused
  // gate/up). Throws std::invalid_argument otherwise.
  explicit PackedMatrix(const WeightMatrix& w)
      : PackedMatrix(std::vector<const WeightMatrix*>{&w}) {}
  explicit PackedMatrix(const std::vector<const WeightMatrix*>& stacked);
  static PanelStorage storage_of(DType dtype);

  int rows() const { return rows_; }  // N, output features
  int cols() const { return cols_; }  // K, input features
  int panels() const { return (rows_ + kPanel - 1) / kPanel; }
  PanelStorage storage() const { return storage_; }
  bool is_bf16() const { return storage_ == PanelStorage::kBF16; }
  // Panel p of f32 storage: cols() * kPanel elements, element (k, j) at k * kPanel + j.
  const float* f32_panel(int p) const { return reinterpret_cast<const float*>(panel_bytes(p)); }
  // Panel p of bf16 storage: element (k, j) at (k / 2) * 2 * kPanel + j * 2 + k % 2.
  const uint16_t* bf16_panel(int p) const {
    return reinterpret_cast<const uint16_t*>(panel_bytes(p));
  }
  // int8 storage, 8-bit codes: code (k, j) at byte (k / 4) * 64 + j * 4 + k % 4; 2-bit codes:
  // in byte (k / 16) * 64 + j * 4 + k % 4 at bits 2 * (k % 16 / 4); 4-bit codes:
  // in byte (k / 8) * 64 + j * 4 + k % 4, the high nibble when (k / 4) is odd; 5- and 6-bit
  // codes: in 320-byte chunks of 32 k and 192-byte chunks of 16 k, as the comment above says.
  const uint8_t* u8_panel(int p) const { return panel_bytes(p); }
  int code_bits() const { return code_bits_; }
  // 4-bit storage of indices into kIq4Codes (IQ4_NL, IQ4_XS) rather than of the codes.
  bool table_codes() const { return table_codes_; }
  // The stored code (k, j) of panel p, whatever its width (the reference path reads this).
  int code(int p, int k, int j) const;
  int code_offset() const { return code_offset_; }
  // int8 storage: k's sub-block is k >> quant_shift() and its super-block k >> super_shift().
  // Factors of panel p: super-block c at c * kPanel + j, sub-block b at b * kPanel + j. The min
  // panels are null when no stacked format has mins.
  int quant_block() const { return 1 << quant_shift_; }
  int quant_shift() const { return quant_shift_; }
  int super_shift() const { return super_shift_; }
  const uint16_t* super_scale_panel(int p) const { return super_scales_.get() + super_offset(p); }
  const int8_t* sub_scale_panel(int p) const { return sub_scales_.get() + sub_offset(p); }
  const uint16_t* super_min_panel(int p) const {
    return super_mins_ ? super_mins_.get() + super_offset(p) : nullptr;
  }
  const uint8_t* sub_min_panel(int p) const {
    return sub_mins_ ? sub_mins_.get() + sub_offset(p) : nullptr;
  }
  bool has_mins() const { return sub_mins_ != nullptr; }
  int sub_blocks_per_super() const { return 1 << (super_shift_ - quant_shift_); }
  // Every sub-block factor is 1 and there are no mins (Q8_0 and Q4_0 alone): the kernels skip
  // the integer factors.
  bool unit_sub_scales() const { return unit_sub_scales_; }
  // Factors of output j of panel p: the f32 d and dmin of super-block s, the integer factors of
  // sub-block b (gemm.h's formula).
  float super_scale(int p, int s, int j) const;
  float super_min(int p, int s, int j) const;
  int sub_scale(int p, int b, int j) const;
  int sub_min(int p, int b, int j) const;
  size_t bytes() const { return bytes_; }

 private:
  size_t sub_offset(int p) const {
    return static_cast<size_t>(p) * static_cast<size_t>(cols_ >> quant_shift_) * kPanel;
  }
  size_t super_offset(int p) const {
    return static_cast<size_t>(p) * static_cast<size_t>(cols_ >> super_shift_) * kPanel;
  }
  void pack_factors(int n, const WeightMatrix& w, int source_row);
  void pack_row(int n, const WeightMatrix& w, int source_row);
  // K as stored: bf16 pads it to whole pairs.
  int stored_cols() const { return storage_ == PanelStorage::kBF16 ? (cols_ + 1) / 2 * 2 : cols_; }
  size_t panel_size() const {
    return static_cast<size_t>(stored_cols()) * kPanel * element_size_ / 8;
  }
  const uint8_t* panel_bytes(int p) const {
    return data_.get() + static_cast<size_t>(p) * panel_size();
  }

  int rows_ = 0, cols_ = 0, quant_shift_ = 5, super_shift_ = 5, code_offset_ = 0, code_bits_ = 8;
  bool unit_sub_scales_ = false, table_codes_ = false;
  PanelStorage storage_ = PanelStorage::kF32;
  size_t element_size_ = 32;  // in bits
  size_t bytes_ = 0;
  std::unique_ptr<uint8_t[], FreeMaybeHuge> data_;
  std::unique_ptr<uint16_t[], FreeMaybeHuge> super_scales_, super_mins_;
  std::unique_ptr<int8_t[], FreeMaybeHuge> sub_scales_;
  std::unique_ptr<uint8_t[], FreeMaybeHuge> sub_mins_;
};

}  // namespace pagedllm::cpu
