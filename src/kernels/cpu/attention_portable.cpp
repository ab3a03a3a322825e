// The reference order of attention_tile.h in plain C++: the generic path, and the one the
// vector paths are tested against bit for bit.
#include <cmath>
#include <limits>
#include <type_traits>

#include "format/dequant.h"
#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/bf16_rounding.h"

namespace pagedllm::cpu::attention {

namespace {

inline float widen(float x) {
  return x;
}
inline float widen(uint16_t x) {  // as vdpbf16ps reads it: a denormal is zero
  return bf16_to_f32(bf16_flushed_bits(x));
}
inline float widen(uint8_t x) {
  return fp8_e4m3_to_f32(x);
}
inline float widen(int8_t x) {  // a q8_0 code, scaled by the caller
  return static_cast<float>(x);
}

// A result as the bf16 order gives it: denormals flushed (MXCSR does it for the vector paths;
// this also holds where std::fma is a library call).
template <typename T>
inline float flushed(float v) {
  if constexpr (kIsBf16<T>) {
    if (std::fpclassify(v) == FP_SUBNORMAL) return std::copysign(0.0f, v);
  }
  return v;
}

// Products in attention_tile.h's order for T: 0..n-1, or the bf16 pairs' (for n odd, the last
// element alone).
template <typename T, typename F>
inline void for_each_product(int n, F&& f) {
  const int end = kIsBf16<T> ? n + n % 2 : n;
  for (int i = 0; i < end; ++i) {
    const int j = product_order<T>(i);
    if (j < n) f(j);
  }
}

template <typename T>
[[gnu::always_inline]] inline void attend_one_query(QueryState& qs, int D, float scale,
                                                    const Chunks<T>& ctx) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int ch = 0; ch <= qs.pos / kChunk; ++ch) {
    const T* kt = ctx.k[ch];
    const T* vt = ctx.v[ch];
    float s[kChunk] = {};
    for_each_product<T>(D, [&](int d) {
      for (int o = 0; o < kChunk; ++o) {
        float k = widen(kt[d * ctx.ldk + o]);
        if constexpr (kIsQ8<T>) k *= f16_to_f32(ctx.ks[ch][d / kQ8Group * ctx.ldk + o]);
        s[o] = flushed<T>(std::fma(qs.q[d], k, s[o]));
      }
    });
    const int first = ch * kChunk;
    float chunk_max = kNegInf;
    for (int o = 0; o < kChunk; ++o) {
      s[o] = first + o <= qs.pos ? s[o] * scale : kNegInf;
      chunk_max = std::max(chunk_max, s[o]);
    }
    const float new_max = std::max(qs.running_max, chunk_max);
    const float correction = exp_nonpositive(qs.running_max - new_max);
    float p[kChunk], sum_terms[kChunk];
    for (int o = 0; o < kChunk; ++o) {
      p[o] = first + o <= qs.pos ? exp_nonpositive(s[o] - new_max) : 0.0f;
      sum_terms[o] = p[o];
    }
    qs.running_sum = std::fma(qs.running_sum, correction, tree_sum16(sum_terms));
    qs.running_max = new_max;
    for (int d = 0; d < D; ++d) qs.acc[d] *= correction;
    if constexpr (kIsBf16<T>) {
      for (float& w : p) w = bf16_flushed_widened(w);
    }
    for_each_product<T>(kChunk, [&](int o) {
      for (int d = 0; d < D; ++d) {
        float v = widen(vt[o * D + d]);
        if constexpr (kIsQ8<T>)
          v *= f16_to_f32(ctx.vs[ch][o * ((D + kQ8Group - 1) / kQ8Group) + d / kQ8Group]);
        qs.acc[d] = flushed<T>(std::fma(p[o], v, qs.acc[d]));
      }
    });
  }
}

// One clone per ISA level (clang cannot clone templates, hence one per element type).
__attribute__((target_clones("arch=x86-64-v3", "default"))) void attend_all_f32(
    QueryState* qs, int nq, int D, float scale, const Chunks<float>& ctx) {
  for (int i = 0; i < nq; ++i) attend_one_query(qs[i], D, scale, ctx);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) void attend_all_bf16(
    QueryState* qs, int nq, int D, float scale, const Chunks<uint16_t>& ctx) {
  for (int i = 0; i < nq; ++i) attend_one_query(qs[i], D, scale, ctx);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) void attend_all_fp8(
    QueryState* qs, int nq, int D, float scale, const Chunks<uint8_t>& ctx) {
  for (int i = 0; i < nq; ++i) attend_one_query(qs[i], D, scale, ctx);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) void attend_all_q8_0(
    QueryState* qs, int nq, int D, float scale, const Chunks<int8_t>& ctx) {
  for (int i = 0; i < nq; ++i) attend_one_query(qs[i], D, scale, ctx);
}

}  // namespace

void round_queries_portable(const float* q, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = bf16_flushed_widened(q[i]);
}

template <typename T>
void attend_queries_portable(QueryState* qs, int nq, int D, float scale, const Chunks<T>& ctx) {
  if constexpr (std::is_same_v<T, float>) {
    attend_all_f32(qs, nq, D, scale, ctx);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    attend_all_fp8(qs, nq, D, scale, ctx);
  } else if constexpr (kIsQ8<T>) {
    attend_all_q8_0(qs, nq, D, scale, ctx);
  } else {
    attend_all_bf16(qs, nq, D, scale, ctx);
  }
}

template void attend_queries_portable(QueryState*, int, int, float, const Chunks<float>&);
template void attend_queries_portable(QueryState*, int, int, float, const Chunks<uint16_t>&);
template void attend_queries_portable(QueryState*, int, int, float, const Chunks<uint8_t>&);
template void attend_queries_portable(QueryState*, int, int, float, const Chunks<int8_t>&);

}  // namespace pagedllm::cpu::attention
