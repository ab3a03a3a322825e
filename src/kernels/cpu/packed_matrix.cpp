#include "kernels/cpu/packed_matrix.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "format/block_quant.h"
#include "format/dequant.h"
#include "kernels/cpu/bf16_activations.h"
#include "util/huge_pages.h"

namespace pagedllm::cpu {

namespace {

// Zeroed (over the threads: util/huge_pages.h), 64-byte aligned; an array of 2 MiB or more on
// transparent huge pages, so that decode's one pass over the weights walks 2 MiB pages rather
// than 4 KiB ones. llama-1b tg128, interleaved runs: q4_k_m 27.5-27.9 -> 29.0-29.9 tok/s, bf16
// 11.5 -> 12.35, q8_0 21.3 -> 21.8.
template <typename T>
T* aligned_array(size_t count) {
  const size_t bytes = std::max<size_t>(64, (count * sizeof(T) + 63) / 64 * 64);
  return static_cast<T*>(allocate_zeroed_maybe_huge(bytes, 64));
}

constexpr bool iq4_codes_are_levels_plus_128() {
  for (int i = 0; i < 16; ++i) {
    if (kIq4Codes[i] != kIq4Levels[i] + 128) return false;
  }
  return true;
}
static_assert(iq4_codes_are_levels_plus_128());

// The index of an IQ4 level (a code unpack_blocks gave for IQ4_NL or IQ4_XS).
int iq4_index(int level) {
  const auto at = std::find(std::begin(kIq4Levels), std::end(kIq4Levels), level);
  return static_cast<int>(at - std::begin(kIq4Levels));
}

}  // namespace

PanelStorage PackedMatrix::storage_of(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return PanelStorage::kBF16;
    case DType::kF32:
    case DType::kF16:
      return PanelStorage::kF32;
    default:
      return PanelStorage::kInt8;
  }
}

PackedMatrix::PackedMatrix(const std::vector<const WeightMatrix*>& stacked) {
  if (stacked.empty()) throw std::invalid_argument("nothing to pack");
  cols_ = stacked[0]->cols;
  storage_ = storage_of(stacked[0]->dtype);
  std::vector<std::pair<const WeightMatrix*, int>> row_source;  // global row -> (matrix, row)
  bool any_mins = false, unit_sub_scales = true, all_iq4 = true;
  int quant_block = 32, super_block = 256, max_stored_code = 0;
  for (const WeightMatrix* m : stacked) {
    if (m->cols != cols_ || storage_of(m->dtype) != storage_) {
      throw std::invalid_argument("stacked matrices must share K and storage class");
    }
    if (storage_ == PanelStorage::kInt8) {
      if (m->cols % block_elements(m->dtype) != 0)
        throw std::invalid_argument("quantized rows must hold whole blocks");
      any_mins = any_mins || pagedllm::has_mins(m->dtype);
      all_iq4 = all_iq4 && (m->dtype == DType::kIQ4_NL || m->dtype == DType::kIQ4_XS);
      // Q8_0 and Q4_0 have one sub-block of factor 1 per block; the k-quants have several.
      unit_sub_scales = unit_sub_scales && sub_block_elements(m->dtype) == block_elements(m->dtype);
      code_offset_ = std::max(code_offset_, -min_code(m->dtype));
      quant_block = std::min(quant_block, sub_block_elements(m->dtype));
      super_block = std::min(super_block, static_cast<int>(block_elements(m->dtype)));
    }
    for (int r = 0; r < m->rows; ++r) row_source.emplace_back(m, r);
  }
  for (const WeightMatrix* m : stacked) {
    if (storage_ == PanelStorage::kInt8)
      max_stored_code = std::max(max_stored_code, max_code(m->dtype) + code_offset_);
  }
  quant_shift_ = quant_block == 16 ? 4 : 5;
  super_shift_ = super_block == 256 ? 8 : 5;
  rows_ = static_cast<int>(row_source.size());
  if (storage_ == PanelStorage::kInt8) {
    unit_sub_scales_ = unit_sub_scales && !any_mins;
    // 5-bit chunks span 32 k, so they need sub-blocks of 32 (6-bit ones hold Q6_K's 16).
    // IQ4's 8-bit codes come from 16 levels: their 4-bit indices are stored instead.
    table_codes_ = all_iq4;
    code_bits_ = max_stored_code <= 3 && !table_codes_        ? 2
                 : max_stored_code <= 15 || table_codes_      ? 4
                 : max_stored_code <= 31 && quant_block == 32 ? 5
                 : max_stored_code <= 63                      ? 6
                                                              : 8;
  }
  element_size_ = storage_ == PanelStorage::kF32    ? 32
                  : storage_ == PanelStorage::kBF16 ? 16
                                                    : static_cast<size_t>(code_bits_);
  bytes_ = static_cast<size_t>(panels()) * panel_size();
  data_.reset(aligned_array<uint8_t>(bytes_));
  if (storage_ == PanelStorage::kInt8) {
    const size_t subs = sub_offset(panels()), supers = super_offset(panels());
    super_scales_.reset(aligned_array<uint16_t>(supers));
    sub_scales_.reset(aligned_array<int8_t>(subs));
    if (any_mins) {
      super_mins_.reset(aligned_array<uint16_t>(supers));
      sub_mins_.reset(aligned_array<uint8_t>(subs));
    }
    bytes_ += (supers * sizeof(uint16_t) + subs) * (any_mins ? 2 : 1);
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < rows_; ++n) {
    pack_row(n, *row_source[static_cast<size_t>(n)].first,
             row_source[static_cast<size_t>(n)].second);
  }
}

// The factors of source row `source_row` of w for output n, each finer sub-block and
// super-block taking those of the file's block and sub-block that hold it.
void PackedMatrix::pack_factors(int n, const WeightMatrix& w, int source_row) {
  const int p = n / kPanel, j = n % kPanel;
  const int block = static_cast<int>(block_elements(w.dtype)), sub = sub_block_elements(w.dtype);
  const uint8_t* src = w.row(source_row);
  const auto factors_at = [&](int k) {
    return block_factors(w.dtype, src + (k / block) * block_bytes(w.dtype));
  };
  const auto at = [j](int i) { return static_cast<size_t>(i) * kPanel + static_cast<size_t>(j); };
  for (int c = 0; c < (cols_ >> super_shift_); ++c) {
    const BlockFactors f = factors_at(c << super_shift_);
    super_scales_[super_offset(p) + at(c)] = f.d;
    if (super_mins_) super_mins_[super_offset(p) + at(c)] = f.dmin;
  }
  for (int b = 0; b < (cols_ >> quant_shift_); ++b) {
    const int k = b << quant_shift_;
    const BlockFactors f = factors_at(k);
    sub_scales_[sub_offset(p) + at(b)] = f.scale[(k % block) / sub];
    if (sub_mins_) sub_mins_[sub_offset(p) + at(b)] = f.min[(k % block) / sub];
  }
}

float PackedMatrix::super_scale(int p, int s, int j) const {
  return f16_to_f32(super_scale_panel(p)[static_cast<size_t>(s) * kPanel + j]);
}

float PackedMatrix::super_min(int p, int s, int j) const {
  return has_mins() ? f16_to_f32(super_min_panel(p)[static_cast<size_t>(s) * kPanel + j]) : 0.0f;
}

int PackedMatrix::sub_scale(int p, int b, int j) const {
  return sub_scale_panel(p)[static_cast<size_t>(b) * kPanel + j];
}

int PackedMatrix::sub_min(int p, int b, int j) const {
  return has_mins() ? sub_min_panel(p)[static_cast<size_t>(b) * kPanel + j] : 0;
}

namespace {

// Where code (k, j) lives in a panel of `bits`-bit codes: its low bits (all 8, 4 or 2 at
// low_shift) and, for 5- and 6-bit codes, its top 1 or 2 bits at high_shift of high_byte.
struct CodePlace {
  size_t low_byte;
  int low_shift;
  size_t high_byte;
  int high_shift;
};

CodePlace place_of(int bits, int k, int j) {
  const size_t lane = static_cast<size_t>(j) * 4 + static_cast<size_t>(k % 4);
  const int nibble_shift = (k / 4) % 2 * 4;
  switch (bits) {
    case 8:
      return {static_cast<size_t>(k / 4) * 64 + lane, 0, 0, 0};
    case 2:
      return {static_cast<size_t>(k / 16) * 64 + lane, k % 16 / 4 * 2, 0, 0};
    case 4:
      return {static_cast<size_t>(k / 8) * 64 + lane, nibble_shift, 0, 0};
    case 5: {
      const size_t chunk = static_cast<size_t>(k / 32) * 320;
      return {chunk + static_cast<size_t>(k % 32 / 8) * 64 + lane, nibble_shift, chunk + 256 + lane,
              k % 32 / 4};
    }
    default: {
      const size_t chunk = static_cast<size_t>(k / 16) * 192;
      return {chunk + static_cast<size_t>(k % 16 / 8) * 64 + lane, nibble_shift, chunk + 128 + lane,
              k % 16 / 4 * 2};
    }
  }
}

}  // namespace

int PackedMatrix::code(int p, int k, int j) const {
  const uint8_t* panel = u8_panel(p);
  const CodePlace at = place_of(code_bits_, k, j);
  if (code_bits_ == 8) return panel[at.low_byte];
  if (code_bits_ == 2) return (panel[at.low_byte] >> at.low_shift) & 3;
  const int low = (panel[at.low_byte] >> at.low_shift) & 0x0F;
  if (code_bits_ == 4) return table_codes_ ? kIq4Codes[static_cast<size_t>(low)] : low;
  const int top_mask = code_bits_ == 5 ? 1 : 3;
  return low | ((panel[at.high_byte] >> at.high_shift) & top_mask) << 4;
}

// Writes source row `source_row` of w as output n: column n % kPanel of panel n / kPanel.
void PackedMatrix::pack_row(int n, const WeightMatrix& w, int source_row) {
  const int p = n / kPanel, j = n % kPanel;
  const uint8_t* src = w.row(source_row);
  uint8_t* panel = data_.get() + static_cast<size_t>(p) * panel_size();
  const auto at = [j](int k) { return static_cast<size_t>(k) * kPanel + static_cast<size_t>(j); };
  if (storage_ == PanelStorage::kBF16) {
    auto* dst = reinterpret_cast<uint16_t*>(panel);
    for (int k = 0; k < cols_; ++k) {
      const size_t pair_at = static_cast<size_t>(k / 2) * 2 * kPanel + static_cast<size_t>(j) * 2;
      dst[pair_at + static_cast<size_t>(k % 2)] = bf16_flushed_bits(load_u16(src + 2 * k));
    }
  } else if (storage_ == PanelStorage::kInt8) {
    std::vector<int8_t> codes(static_cast<size_t>(cols_));
    std::vector<float> scales(static_cast<size_t>(cols_ / sub_block_elements(w.dtype)));
    std::vector<float> mins(scales.size());
    unpack_blocks(w.dtype, src, cols_, codes.data(), scales.data(), mins.data());
    for (int k = 0; k < cols_; ++k) {
      const int u = table_codes_ ? iq4_index(codes[static_cast<size_t>(k)])
                                 : codes[static_cast<size_t>(k)] + code_offset_;
      const CodePlace at = place_of(code_bits_, k, j);
      // Each byte holds codes of this row alone, so the parallel pack does not race.
      if (code_bits_ == 8) {
        panel[at.low_byte] = static_cast<uint8_t>(u);
      } else if (code_bits_ == 2) {
        panel[at.low_byte] |= static_cast<uint8_t>(u << at.low_shift);
      } else {
        panel[at.low_byte] |= static_cast<uint8_t>((u & 0x0F) << at.low_shift);
        if (code_bits_ != 4) panel[at.high_byte] |= static_cast<uint8_t>((u >> 4) << at.high_shift);
      }
    }
    pack_factors(n, w, source_row);
  } else {
    std::vector<float> row(static_cast<size_t>(cols_));
    dequantize_row(w.dtype, src, row.data(), cols_);
    auto* dst = reinterpret_cast<float*>(panel);
    for (int k = 0; k < cols_; ++k) dst[at(k)] = row[static_cast<size_t>(k)];
  }
}

}  // namespace pagedllm::cpu
