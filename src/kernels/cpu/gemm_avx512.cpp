// AVX-512 GEMM tile (compiled with -mavx512f -mavx512bw -mavx512vl -mfma; called only when the
// CPU has them). Same orders as gemm_tile_generic: for f32 weights one FMA per k into the
// block's one chain; for bf16 weights, on CPUs without AVX512-BF16, two FMAs per k pair (odd k,
// then even k) with denormals flushed, which is what vdpbf16ps computes.
#include "kernels/cpu/gemm_tile_avx512.h"

namespace pagedllm::cpu {

namespace {

// f32 weights: one step is one k. Base pointers are taken once per tile (the compiler would
// recompute them from TileArgs at every step).
template <int MR, int NP>
struct F32Steps {
  static constexpr int kBlock = kKBlock;
  static constexpr int kChains = 1;
  const float* panel[NP];
  const float* x[MR];
  int K;
  // The next group's panels (TileArgs::next_p): step k fetches line next_line + k while
  // k < next_steps.
  const float* next[NP] = {};
  int next_line = 0, next_steps = 0;
  explicit F32Steps(const TileArgs& a) : K(a.K) {
    for (int q = 0; q < NP; ++q) panel[q] = a.w->f32_panel(a.p + q);
    for (int m = 0; m < MR; ++m) x[m] = a.x + static_cast<size_t>(m) * a.ldx;
    if (a.next_p >= 0) {
      for (int q = 0; q < NP; ++q) next[q] = a.w->f32_panel(a.next_p + q);
      next_line = a.next_line;
      next_steps = std::clamp(NP * K - a.next_line, 0, K);
    }
  }
  int count() const { return K; }
  void step(int k, __m512 (&chain)[MR][NP]) const {
    __m512 w[NP];
    for (int q = 0; q < NP; ++q) {
      const float* line = panel[q] + static_cast<size_t>(k) * PackedMatrix::kPanel;
      prefetch_stream(line);
      w[q] = _mm512_load_ps(line);
    }
    if (k < next_steps) {
      const int i = next_line + k;
      _mm_prefetch(reinterpret_cast<const char*>(next[i % NP] + static_cast<size_t>(i / NP) *
                                                                    PackedMatrix::kPanel),
                   _MM_HINT_T0);
    }
    for (int m = 0; m < MR; ++m) {
      const __m512 xb = _mm512_set1_ps(x[m][k]);
      for (int q = 0; q < NP; ++q) chain[m][q] = _mm512_fmadd_ps(xb, w[q], chain[m][q]);
    }
  }
};

// bf16 weights: one step is one k pair. A 32-bit lane holds bf16 k = 2i low and 2i + 1 high, so
// a shift and a mask widen them to f32.
template <int MR, int NP>
struct Bf16PairSteps : avx512::Bf16PairBase<MR, NP> {
  using avx512::Bf16PairBase<MR, NP>::Bf16PairBase;
  // The zero-masked shift: the unmasked one trips g++ 12's -Wmaybe-uninitialized.
  static __m512 even_of(__m512i v) {
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, v, 16));
  }
  static __m512 odd_of(__m512i v) {
    return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(~0xFFFF)));
  }
  void step(int i, __m512 (&chain)[MR][NP]) const {
    __m512i w[NP];
    for (int q = 0; q < NP; ++q) w[q] = this->line(q, i);
    for (int m = 0; m < MR; ++m) {
      const __m512i xm = _mm512_set1_epi32(static_cast<int>(this->x[m][i]));
      const __m512 x_odd = odd_of(xm), x_even = even_of(xm);
      for (int q = 0; q < NP; ++q) {
        chain[m][q] = _mm512_fmadd_ps(x_odd, odd_of(w[q]), chain[m][q]);
        chain[m][q] = _mm512_fmadd_ps(x_even, even_of(w[q]), chain[m][q]);
      }
    }
  }
};

// bf16 weights against activations widened to f32 once per product (Bf16Activations::widened):
// each FMA takes its activation as a broadcast from memory, so a step costs the FMAs, the weight
// lines' shift and mask, and nothing per row (Bf16PairSteps widens each row's pair in registers).
template <int MR, int NP>
struct Bf16WideSteps : avx512::Bf16PairBase<MR, NP> {
  const float* wide[MR];
  explicit Bf16WideSteps(const TileArgs& a) : avx512::Bf16PairBase<MR, NP>(a) {
    for (int m = 0; m < MR; ++m) wide[m] = a.xb->widened_row(a.m0 + m);
  }
  void step(int i, __m512 (&chain)[MR][NP]) const {
    __m512 odd[NP], even[NP];
    for (int q = 0; q < NP; ++q) {
      const __m512i w = this->line(q, i);
      odd[q] = Bf16PairSteps<MR, NP>::odd_of(w);
      even[q] = Bf16PairSteps<MR, NP>::even_of(w);
    }
    for (int m = 0; m < MR; ++m) {
      const __m512 x_odd = _mm512_set1_ps(wide[m][2 * i + 1]);
      const __m512 x_even = _mm512_set1_ps(wide[m][2 * i]);
      for (int q = 0; q < NP; ++q) {
        chain[m][q] = _mm512_fmadd_ps(x_odd, odd[q], chain[m][q]);
        chain[m][q] = _mm512_fmadd_ps(x_even, even[q], chain[m][q]);
      }
    }
  }
};

}  // namespace

void gemm_bf16_tile_fma(const TileArgs& a) {
  const FlushDenormals flush;
  avx512::dispatch<Bf16WideSteps>(a);
}

void gemm_tile_avx512(const TileArgs& a) {
  if (a.w->storage() == PanelStorage::kBF16) {
    const FlushDenormals flush;
    avx512::dispatch<Bf16PairSteps>(a);
  } else {
    avx512::dispatch<F32Steps, kMaxTilePanels, kF32BatchRows>(a);
  }
}

}  // namespace pagedllm::cpu
