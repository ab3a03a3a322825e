// bf16 matrix products through oneDNN's matmul, for the machines where it is far faster than the
// native kernels: oneDNN multiplies bf16 with AMX tiles (measured here: 2.0-2.2 TFLOP/s at M=512
// with 2 threads, against 0.22 for vdpbf16ps), and requests the AMX permission from the kernel
// itself, falling back to AVX-512 where the OS refuses it.
//
// oneDNN reads the packed weights in place, so no second copy is kept: a bf16 PackedMatrix
// ([N/16][K/2][16][2], packed_matrix.h) is oneDNN's BA16a16b2a layout of the [K, N] weight when K
// is a multiple of 32 (that layout's k blocks are 16 x 2, and it pads K to whole blocks).
// Activations are the same bf16 rounding as the native path (bf16_activations.h), so a product
// differs from the native one only in the order its f32 partial sums are added: it is not
// bit-identical to gemm.h's order, nor invariant to the batch size. That is why the backend is
// chosen per process and logged.
#pragma once

#include <string>

#include "kernels/cpu/bf16_activations.h"
#include "kernels/cpu/packed_matrix.h"

namespace pagedllm::cpu {

enum class MatmulBackend {
  kAuto,    // oneDNN where it multiplies bf16 with AMX and the native ISA is not narrowed; else
            // native
  kNative,  // gemm.h's kernels everywhere: bit-identical across ISAs and batch sizes
  kOneDnn,  // oneDNN for every bf16 product of at least kOneDnnMinRows rows
};

const char* to_string(MatmulBackend backend);
// "auto", "native" or "onednn"; throws std::invalid_argument otherwise.
MatmulBackend parse_matmul_backend(const std::string& name);
// PAGEDLLM_MATMUL when it names a backend, else auto.
MatmulBackend matmul_backend_from_env();
// The process-wide choice, matmul_backend_from_env() until set.
MatmulBackend matmul_backend();
void set_matmul_backend(MatmulBackend backend);
// The ISA oneDNN runs on this machine ("avx512_core_amx", ...), for logs.
std::string onednn_isa();
bool onednn_has_amx();
// The choice and what bf16 products of kOneDnnMinRows or more rows run on, for logs:
// "auto:onednn[brg:avx512_core_amx_bf16]", "native:native".
std::string describe_matmul_backend();

// Below this many rows the native kernels stream the weights faster (decode is bandwidth-bound:
// at M=1, K=2048, N=16384 the native bf16 kernel takes 1.2 ms, oneDNN's AMX kernel 2.5 ms; from
// M=8 up oneDNN is ahead, 430 against 222 GFLOP/s).
constexpr int kOneDnnMinRows = 8;

// Whether gemm_packed sends an M-row product against w to oneDNN under the current backend.
bool uses_onednn(const PackedMatrix& w, int M);
// Whether oneDNN can read w in place: bf16 storage with K a multiple of 32.
bool onednn_can_read(const PackedMatrix& w);
// y[M, N] = xb . W^T (+ bias); call only when onednn_can_read(w). Returns false, computing
// nothing, when oneDNN has no bf16 matmul for this CPU.
bool gemm_bf16_onednn(const Bf16Activations& xb, int M, const PackedMatrix& w, float* y,
                      const float* bias);

}  // namespace pagedllm::cpu
