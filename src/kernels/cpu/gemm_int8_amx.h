// AMX-INT8 tile for block-quantized weights (gemm_int8_amx.cpp; call only when
// cpu_supports(Isa::kAmxInt8)). One tdpbsud multiplies up to 16 activation rows by a panel's
// codes over one sub-block: the exact integer dot products that VNNI's vpdpbusd sums, so the
// float epilogue (gemm.h's order) gives the same bits.
//
// g++ 12's _tile_loadconfig tells the compiler it reads only the first 8 bytes of the 64-byte
// configuration, so the stores of the rows and column widths can be dropped as dead and
// tileloadd then faults (seen in llama.cpp's AMX kernel built with gcc 12). The tile
// intrinsics also hide their memory accesses. The kernel therefore issues ldtilecfg, tileloadd
// and tilestored in its own asm, with the whole configuration as an input operand and a memory
// clobber; amx_tile_config_round_trip lets a test check what the CPU received.
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm.h"

namespace pagedllm::cpu {

// The 64-byte tile configuration (palette 1): per tile register, rows and bytes per row.
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64);

// The configuration the kernel loads for a tile of `rows` activation rows, sub-blocks of `block`
// codes and `panels` weight panels.
AmxTileConfig amx_int8_config(int rows, int block, int panels);
// Loads amx_int8_config(rows, block, panels) as the kernel does and returns what sttilecfg
// reads back.
AmxTileConfig amx_tile_config_round_trip(int rows, int block, int panels);
// Loads a configuration, reads it back and runs a small tile product checked against scalar
// sums: null when all is right, else what went wrong. May raise SIGILL where AMX does not run
// (cpu_features.cpp catches it).
const char* amx_int8_self_test();

}  // namespace pagedllm::cpu
