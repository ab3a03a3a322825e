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

void round_row_to_bf16_dot(const float* x, int K, uint32_t* row) {
  int k = 0;
  for (; k + 32 <= K; k += 32) {
    // Words in memory order x[k..k+31]: pair i = (x[k+2i] low, x[k+2i+1] high).
    const __m512bh words = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(x + k));
    _mm512_storeu_si512(row + k / 2, reinterpret_cast<__m512i>(words));
  }
  if (k < K) {
    const int left = K - k;  // an odd K's pad word converts a masked-off zero
    const auto lanes = [](int n) {
      return static_cast<__mmask16>(n <= 0 ? 0u : n >= 16 ? 0xFFFFu : (1u << n) - 1u);
    };
    const __m512bh words = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(lanes(left - 16), x + k + 16),
                                               _mm512_maskz_loadu_ps(lanes(left), x + k));
    const int pairs = (left + 1) / 2;
    _mm512_mask_storeu_epi32(row + k / 2, lanes(pairs), reinterpret_cast<__m512i>(words));
  }
}

void gemm_bf16_tile_dot(const TileArgs& a) {
  const FlushDenormals flush;
  avx512::dispatch<DotSteps>(a);
}

}  // namespace pagedllm::cpu
