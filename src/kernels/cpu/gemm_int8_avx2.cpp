// The 256-bit int8 tile with AVX2 alone (gemm_int8_ymm.h): vpmaddubsw and vpmaddwd.
#include "kernels/cpu/gemm_int8_ymm.h"

namespace pagedllm::cpu {

void gemm_int8_tile_avx2(const TileArgs& a) {
  int8_ymm_tile<false>(a);
}

}  // namespace pagedllm::cpu
