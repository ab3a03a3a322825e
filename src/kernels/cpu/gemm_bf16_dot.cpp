// bf16 GEMM tile with AVX512-BF16 (compiled with -mavx512bf16 besides AVX-512; called only when
// the CPU has it). One vdpbf16ps multiplies a k pair of 16 outputs by a broadcast activation
// pair: 64 flops per instruction, twice an f32 FMA's. Its order (odd k, then even k, denormals
// flushed) is the one gemm.h gives for bf16 weights; MXCSR flushes the block and bias adds too.
#include "kernels/cpu/gemm_tile_avx512.h"

namespace pagedllm::cpu {

namespace {

template <int MR, int NP>
struct DotSteps : avx512::Bf16PairBase<MR, NP> {
  using avx512::Bf16PairBase<MR, NP>::Bf16PairBase;
  void step(int i, __m512 (&chain)[MR][NP]) const {
    __m512bh w[NP];
    for (int q = 0; q < NP; ++q) w[q] = reinterpret_cast<__m512bh>(this->line(q, i));
    for (int m = 0; m < MR; ++m) {
      const __m512bh xm =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(this->x[m][i])));
      for (int q = 0; q < NP; ++q) chain[m][q] = _mm512_dpbf16_ps(chain[m][q], w[q], xm);
    }
  }
};

}  // namespace

void gemm_bf16_tile_dot(const TileArgs& a) {
  const FlushDenormals flush;
  avx512::dispatch<DotSteps>(a);
}

}  // namespace pagedllm::cpu
