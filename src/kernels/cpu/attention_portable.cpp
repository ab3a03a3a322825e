// The reference order of attention_tile.h in plain C++: the generic path, and the one the
// vector paths are tested against bit for bit.
#include <limits>
#include <type_traits>

#include "format/dequant.h"
#include "kernels/cpu/attention_tile.h"

namespace pagedllm::cpu::attention {

namespace {

inline float widen(float x) {
  return x;
}
inline float widen(uint16_t x) {
  return bf16_to_f32(x);
}
inline float widen(uint8_t x) {
  return fp8_e4m3_to_f32(x);
}
inline float widen(int8_t x) {  // a q8_0 code, scaled by the caller
  return static_cast<float>(x);
}

template <typename T>
[[gnu::always_inline]] inline void attend_one_query(QueryState& qs, int D, float scale,
                                                    const Chunks<T>& ctx) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int ch = 0; ch <= qs.pos / kChunk; ++ch) {
    const T* kt = ctx.k[ch];
    const T* vt = ctx.v[ch];
    float s[kChunk] = {};
    for (int d = 0; d < D; ++d) {
      for (int o = 0; o < kChunk; ++o) {
        float k = widen(kt[d * ctx.ldk + o]);
        if constexpr (kIsQ8<T>) k *= f16_to_f32(ctx.ks[ch][d / kQ8Group * ctx.ldk + o]);
        s[o] = std::fma(qs.q[d], k, s[o]);
      }
    }
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
    for (int o = 0; o < kChunk; ++o) {
      for (int d = 0; d < D; ++d) {
        float v = widen(vt[o * D + d]);
        if constexpr (kIsQ8<T>)
          v *= f16_to_f32(ctx.vs[ch][o * ((D + kQ8Group - 1) / kQ8Group) + d / kQ8Group]);
        qs.acc[d] = std::fma(p[o], v, qs.acc[d]);
      }
    }
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
