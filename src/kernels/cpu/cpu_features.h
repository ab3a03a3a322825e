// Runtime ISA dispatch: one binary runs everywhere and uses the widest vectors the CPU has.
// PAGEDLLM_ISA=generic|avx2|avxvnni|avx512|avx512vnni|avx512bf16|amx forces a narrower path (tests,
// benchmarks); a request for a path the CPU cannot run falls back to the best it can.
#pragma once

#include <string>

namespace pagedllm::cpu {

// kAvx512Vnni adds AVX512-VNNI int8 dot products (block-quantized weights); kAvx512 without it
// runs those on the AVX2 int8 kernel. kAvx512Bf16 adds AVX512-BF16 dot products (bf16 weights);
// the narrower paths compute the same bits with f32 FMA. kAmxInt8 adds AMX-INT8 tile products
// for multi-row products of block-quantized weights (the same exact integer dot products as
// VNNI). Each level implies the ones before it, but for kAvxVnni: AVX2 with AVX-VNNI's 256-bit
// vpdpbusd for 8-bit codes (Intel client CPUs since Alder Lake have it and no AVX-512), chosen
// only where the CPU has no AVX-512; an AVX-512 CPU may lack it (Skylake-X), so code tests for
// it by equality, never by order.
enum class Isa { kGeneric, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni, kAvx512Bf16, kAmxInt8 };

const char* to_string(Isa isa);
// What this CPU supports, best first.
bool cpu_supports(Isa isa);
// The path in use: the best supported, or PAGEDLLM_ISA when that is supported.
Isa active_isa();
// For tests: force a path for this process (ignored when unsupported). Returns the path set.
Isa set_isa(Isa isa);
// Whether AMX-INT8 runs here: the CPU advertises AMX-TILE and AMX-INT8, the OS enables their
// state, the kernel grants this process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM), and a
// small tile product, run with SIGILL caught, gives the right integers. Probed once; "" when
// usable, else why not ("not advertised", ...).
const std::string& amx_int8_unusable_reason();
// Flags relevant to the kernels, for logs ("avx512f avx512bw avx512_bf16 ...").
std::string cpu_flags_summary();

}  // namespace pagedllm::cpu
