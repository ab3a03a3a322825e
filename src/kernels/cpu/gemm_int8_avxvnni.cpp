// The 256-bit int8 tile with AVX-VNNI (gemm_int8_ymm.h): vpdpbusd for 8-bit codes. Compiled with
// -mavxvnni and called only where the CPU has it (Isa::kAvxVnni).
#include "kernels/cpu/gemm_int8_ymm.h"

namespace pagedllm::cpu {

void gemm_int8_tile_avxvnni(const TileArgs& a) {
  int8_ymm_tile<true>(a);
}

}  // namespace pagedllm::cpu
