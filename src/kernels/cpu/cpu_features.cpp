#include "kernels/cpu/cpu_features.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace pagedllm::cpu {

namespace {

// CPUID.1:ECX.F16C (clang's __builtin_cpu_supports does not know "f16c").
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// CPUID.(7,1):EAX.AVX512_BF16 (compilers disagree on the name __builtin_cpu_supports takes).
bool has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
}

Isa best_supported() {
  if (cpu_supports(Isa::kAvx512Bf16)) return Isa::kAvx512Bf16;
  if (cpu_supports(Isa::kAvx512Vnni)) return Isa::kAvx512Vnni;
  if (cpu_supports(Isa::kAvx512)) return Isa::kAvx512;
  if (cpu_supports(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kGeneric;
}

Isa from_env() {
  const char* env = std::getenv("PAGEDLLM_ISA");
  Isa want = best_supported();
  if (env && std::strcmp(env, "generic") == 0) want = Isa::kGeneric;
  if (env && std::strcmp(env, "avx2") == 0) want = Isa::kAvx2;
  if (env && std::strcmp(env, "avx512") == 0) want = Isa::kAvx512;
  if (env && std::strcmp(env, "avx512vnni") == 0) want = Isa::kAvx512Vnni;
  if (env && std::strcmp(env, "avx512bf16") == 0) want = Isa::kAvx512Bf16;
  return cpu_supports(want) ? want : best_supported();
}

std::atomic<Isa>& current() {
  static std::atomic<Isa> isa{from_env()};
  return isa;
}

}  // namespace

const char* to_string(Isa isa) {
  switch (isa) {
    case Isa::kGeneric:
      return "generic";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx512Vnni:
      return "avx512vnni";
    case Isa::kAvx512Bf16:
      return "avx512bf16";
  }
  return "?";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::kGeneric:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
    case Isa::kAvx512Vnni:
      return cpu_supports(Isa::kAvx512) && __builtin_cpu_supports("avx512vnni");
    case Isa::kAvx512Bf16:
      return cpu_supports(Isa::kAvx512Vnni) && has_avx512_bf16();
  }
  return false;
}

Isa active_isa() {
  return current().load(std::memory_order_relaxed);
}

Isa set_isa(Isa isa) {
  const Isa chosen = cpu_supports(isa) ? isa : best_supported();
  current().store(chosen);
  return chosen;
}

std::string cpu_flags_summary() {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : " ") + std::string(name);
  };
  // CPUID leaf 7 directly: compilers disagree on the feature names they accept.
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool leaf7 = __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  const bool leaf7_1 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) != 0;
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(leaf7 && (c & (1u << 11)), "avx512_vnni");
  add(leaf7_1 && (a1 & (1u << 5)), "avx512_bf16");
  add(leaf7 && (d & (1u << 24)), "amx_tile");
  return s;
}

}  // namespace pagedllm::cpu
