// AMX-INT8 tile (compiled with AVX-512 F/BW/VL for the epilogue; the tile instructions are
// written in asm, see gemm_int8_amx.h). Tile registers: 0 and 3 hold the activation codes of a
// sub-block (rows x block bytes), 1 + q the weight codes of panel q in VNNI order (block / 4
// rows of 64 bytes), 4 + 2 * parity + q their dot products (rows x 16 int32).
#include "kernels/cpu/gemm_int8_amx.h"

#include <cstring>

#include "kernels/cpu/gemm_int8_avx512.h"

namespace pagedllm::cpu {

namespace {

constexpr int kA0 = 0, kB = 1, kA1 = 3, kC = 4;
constexpr int kMaxRows = kAmxTileRows, kMaxBlock = 32;

void load_config(const AmxTileConfig& config) {
  asm volatile("ldtilecfg %0" : : "m"(config) : "memory");
}

void store_config(AmxTileConfig& config) {
  asm volatile("sttilecfg %0" : "=m"(config) : : "memory");
}

void release_tiles() {
  asm volatile("tilerelease" : : : "memory");
}

template <int T>
void tile_load(const void* base, size_t stride) {
  asm volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(base), "r"(stride), "i"(T) : "memory");
}

template <int T>
void tile_store(void* base, size_t stride) {
  asm volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(base), "r"(stride), "i"(T) : "memory");
}

template <int T>
void tile_zero() {
  asm volatile("tilezero %%tmm%c0" : : "i"(T));
}

// tmm C += tmm A (signed bytes) . tmm B (unsigned bytes, VNNI order).
template <int C, int A, int B>
void tile_dot_signed_by_unsigned() {
  asm volatile("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B));
}

// Panel q's u8 codes for the sub-block from k0 in VNNI order, 64-byte rows: the packed panel
// itself for 8-bit codes, else unpacked into `scratch`.
template <int kBits>
const uint8_t* weight_rows(const PackedMatrix& w, int p, int k0, int block,
                           uint8_t (&scratch)[kMaxBlock / 4][64]) {
  const uint8_t* panel = w.u8_panel(p);
  if constexpr (kBits == 8) {
    return panel + static_cast<size_t>(k0) * 16;
  } else if constexpr (kBits == 4 || kBits == kTableCodes) {
    for (int k = k0, row = 0; k < k0 + block; k += 8, row += 2) {
      __m512i low, high;
      const __m512i line = _mm512_load_si512(panel + static_cast<size_t>(k) * 8);
      if constexpr (kBits == kTableCodes) {
        int8::unpack_table_codes(line, low, high);
      } else {
        int8::unpack_nibbles(line, low, high);
      }
      _mm512_store_si512(scratch[row], low);
      _mm512_store_si512(scratch[row + 1], high);
    }
  } else if constexpr (kBits == 2) {
    for (int k = k0, row = 0; k < k0 + block; k += 16, row += 4) {
      __m512i groups[4];
      int8::unpack_two_bits(panel + static_cast<size_t>(k) * 4, groups);
      for (int g = 0; g < 4; ++g) _mm512_store_si512(scratch[row + g], groups[g]);
    }
  } else if constexpr (kBits == 5) {
    for (int k = k0, row = 0; k < k0 + block; k += 32, row += 8) {
      __m512i groups[8];
      int8::unpack_five_bits(panel + static_cast<size_t>(k) * 10, groups);
      for (int g = 0; g < 8; ++g) _mm512_store_si512(scratch[row + g], groups[g]);
    }
  } else {
    for (int k = k0, row = 0; k < k0 + block; k += 16, row += 4) {
      __m512i groups[4];
      int8::unpack_six_bits(panel + static_cast<size_t>(k) * 12, groups);
      for (int g = 0; g < 4; ++g) _mm512_store_si512(scratch[row + g], groups[g]);
    }
  }
  return scratch[0];
}

// Sub-block products are pipelined: the tile registers of sub-block b's products alternate
// between two sets (parity b % 2), so that b + 1's products run while b's epilogue does.
template <int Parity>
constexpr int a_tile() {
  return Parity == 0 ? kA0 : kA1;
}
template <int Parity>
constexpr int c_tile(int q) {
  return kC + 2 * Parity + q;
}

// Starts the integer dot products of the tile's rows with panels [p, p + NP) over the
// sub-block from k0, in the tiles of `Parity`.
template <int Parity, int NP, int kBits>
void start_dots(const TileArgs& a, int k0, int block) {
  alignas(64) uint8_t scratch[NP][kMaxBlock / 4][64];
  tile_load<a_tile<Parity>()>(a.xq->row(a.m0) + k0, static_cast<size_t>(a.xq->K));
  tile_load<kB>(weight_rows<kBits>(*a.w, a.p, k0, block, scratch[0]), 64);
  tile_zero<c_tile<Parity>(0)>();
  tile_dot_signed_by_unsigned<c_tile<Parity>(0), a_tile<Parity>(), kB>();
  if constexpr (NP == 2) {
    tile_load<kB + 1>(weight_rows<kBits>(*a.w, a.p + 1, k0, block, scratch[1]), 64);
    tile_zero<c_tile<Parity>(1)>();
    tile_dot_signed_by_unsigned<c_tile<Parity>(1), a_tile<Parity>(), kB + 1>();
  }
}

// Waits for the products started in the tiles of `Parity`: dots[q][row][column].
template <int Parity, int NP>
void finish_dots(int32_t (&dots)[NP][kMaxRows][16]) {
  tile_store<c_tile<Parity>(0)>(dots[0], 64);
  if constexpr (NP == 2) tile_store<c_tile<Parity>(1)>(dots[1], 64);
}

// The shape whose configuration this thread's tiles hold (ldtilecfg costs about a tenth of a
// 16 x 32 x 2048 tile); rows 0 when released.
struct LoadedShape {
  int rows = 0, block = 0, panels = 0;
};
thread_local LoadedShape loaded;

void configure(int rows, int block, int panels) {
  if (loaded.rows == rows && loaded.block == block && loaded.panels == panels) return;
  load_config(amx_int8_config(rows, block, panels));
  loaded = {rows, block, panels};
}

template <int NP, bool kMins, int kBits, bool kUnit>
void tile(const TileArgs& a) {
  const PackedMatrix& w = *a.w;
  const int block = w.quant_block(), subs = w.sub_blocks_per_super();
  const int sub_blocks = a.K >> w.quant_shift();
  configure(a.mr, block, NP);
  alignas(64) float total[kMaxRows][NP][16];
  std::memset(total, 0, sizeof total);
  alignas(64) int32_t dots[2][NP][kMaxRows][16];  // by parity
  // The super-block's sum of scale * dot so far (unit scales: one sub-block per super-block).
  alignas(64) int32_t isum[kMaxRows][NP][16];
  const auto add_terms = [&](int b) {
    if constexpr (!kUnit) {
      __m512i scale[NP];
      for (int q = 0; q < NP; ++q) scale[q] = int8::sub_scales(w, a.p + q, b);
      for (int m = 0; m < a.mr; ++m) {
        for (int q = 0; q < NP; ++q) {
          __m512i sum = _mm512_mullo_epi32(_mm512_load_si512(dots[b % 2][q][m]), scale[q]);
          if (b % subs != 0) sum = _mm512_add_epi32(_mm512_load_si512(isum[m][q]), sum);
          _mm512_store_si512(isum[m][q], sum);
        }
      }
      if (b % subs != subs - 1) return;
    }
    const int s = b / subs;
    const int8::SuperBlockFactors<NP, kMins, kUnit> factors(w, a.p, s, a.xf->pairs);
    for (int m = 0; m < a.mr; ++m) {
      for (int q = 0; q < NP; ++q) {
        const __m512i sum = _mm512_load_si512(kUnit ? dots[b % 2][q][m] : isum[m][q]);
        const __m512 t =
            int8::super_block_term(sum, factors, q, *a.xf, a.m0 + m, s, w.code_offset() != 0);
        _mm512_store_ps(total[m][q], _mm512_add_ps(_mm512_load_ps(total[m][q]), t));
      }
    }
  };
  // Sub-block b's epilogue reads products stored before it, while b + 2's run; b + 1's are
  // stored only after it (the stores wait for their products).
  start_dots<0, NP, kBits>(a, 0, block);
  if (sub_blocks > 1) start_dots<1, NP, kBits>(a, block, block);
  finish_dots<0, NP>(dots[0]);
  for (int b = 0; b < sub_blocks; b += 2) {
    if (b + 2 < sub_blocks) start_dots<0, NP, kBits>(a, (b + 2) * block, block);
    add_terms(b);
    if (b + 1 >= sub_blocks) break;
    finish_dots<1, NP>(dots[1]);
    if (b + 3 < sub_blocks) start_dots<1, NP, kBits>(a, (b + 3) * block, block);
    add_terms(b + 1);
    if (b + 2 < sub_blocks) finish_dots<0, NP>(dots[0]);
  }
  for (int q = 0; q < NP; ++q) {
    for (int m = 0; m < a.mr; ++m) int8::store_outputs(a, m, q, _mm512_load_ps(total[m][q]));
  }
}

}  // namespace

AmxTileConfig amx_int8_config(int rows, int block, int panels) {
  AmxTileConfig c;
  for (int t : {kA0, kA1}) {
    c.rows[t] = static_cast<uint8_t>(rows);
    c.colsb[t] = static_cast<uint16_t>(block);
  }
  for (int q = 0; q < panels; ++q) {
    c.rows[kB + q] = static_cast<uint8_t>(block / 4);
    c.colsb[kB + q] = 64;
    for (int parity = 0; parity < 2; ++parity) {
      c.rows[kC + 2 * parity + q] = static_cast<uint8_t>(rows);
      c.colsb[kC + 2 * parity + q] = 64;
    }
  }
  return c;
}

void amx_release_tiles() {
  release_tiles();
  loaded = {};
}

AmxTileConfig amx_tile_config_round_trip(int rows, int block, int panels) {
  configure(rows, block, panels);
  AmxTileConfig seen;
  store_config(seen);
  amx_release_tiles();
  return seen;
}

const char* amx_int8_self_test() {
  constexpr int kRows = 3;
  alignas(64) int8_t x[kRows][kMaxBlock];
  alignas(64) uint8_t codes[kMaxBlock / 4][64];
  for (int m = 0; m < kRows; ++m) {
    for (int k = 0; k < kMaxBlock; ++k)
      x[m][k] = static_cast<int8_t>((m * 37 + k * 11) % 255 - 127);
  }
  for (int r = 0; r < kMaxBlock / 4; ++r) {
    for (int i = 0; i < 64; ++i) codes[r][i] = static_cast<uint8_t>((r * 64 + i) * 29 % 256);
  }
  alignas(64) int32_t dots[kRows][16];
  configure(kRows, kMaxBlock, 1);
  AmxTileConfig seen;
  store_config(seen);
  const AmxTileConfig want = amx_int8_config(kRows, kMaxBlock, 1);
  if (std::memcmp(&seen, &want, sizeof want) != 0) {
    amx_release_tiles();
    return "the tile configuration did not reach the CPU";
  }
  tile_load<kA0>(x, kMaxBlock);
  tile_zero<kC>();
  tile_load<kB>(codes, 64);
  tile_dot_signed_by_unsigned<kC, kA0, kB>();
  tile_store<kC>(dots, 64);
  amx_release_tiles();
  for (int m = 0; m < kRows; ++m) {
    for (int j = 0; j < 16; ++j) {
      int32_t sum = 0;
      for (int k = 0; k < kMaxBlock; ++k) sum += x[m][k] * codes[k / 4][j * 4 + k % 4];
      if (dots[m][j] != sum) return "wrong dot products";
    }
  }
  return nullptr;
}

void gemm_int8_tile_amx(const TileArgs& a) {
  with_int8_shape(*a.w, [&](auto mins, auto bits) {
    if (!mins.value && a.w->unit_sub_scales()) {
      if (a.np == 2) return tile<2, false, bits.value, true>(a);
      return tile<1, false, bits.value, true>(a);
    }
    if (a.np == 2) return tile<2, mins.value, bits.value, false>(a);
    tile<1, mins.value, bits.value, false>(a);
  });
}

}  // namespace pagedllm::cpu
