// Which tile multiplies bf16 weights by batches (kBf16BatchMinRows activation rows or more) on a
// CPU with AVX512-BF16. vdpbf16ps does a k pair of 16 outputs per instruction, but some CPUs
// issue it on one port only, where two f32 FMAs per k pair on activations widened once per product
// (gemm_bf16_tile_fma) issue on two and finish first: on the 2-vCPU Intel Xeon without AMX,
// llama-110m bf16 pp512 ran at 955-962 tokens/s with vdpbf16ps and at 1040-1050 with FMAs even
// before the widening. Where vdpbf16ps issues as fast as an FMA it does twice the work. Both
// tiles give the same bits (the FMA tile computes vdpbf16ps's order, with MXCSR's flushing), so
// the process times both once on a small product that stays in L2 and keeps the faster; decode
// (1 or 2 rows) keeps vdpbf16ps, which streams the weights as fast.
#pragma once

#include <string>

namespace pagedllm::cpu {

enum class Bf16BatchTile { kDot, kFma };

constexpr int kBf16BatchMinRows = 3;

const char* to_string(Bf16BatchTile tile);
// The process's choice: PAGEDLLM_BF16_BATCH=dot|fma where set, else measured at the first call.
Bf16BatchTile bf16_batch_tile();
// Overrides the choice (tests, benchmarks).
void set_bf16_batch_tile(Bf16BatchTile tile);
// For logs: "fma (dot/fma time 1.42)", "dot (forced)".
std::string describe_bf16_batch_tile();

}  // namespace pagedllm::cpu
