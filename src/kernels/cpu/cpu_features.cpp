#include "kernels/cpu/cpu_features.h"

#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/gemm_int8_amx.h"

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

// CPUID.(7,1):EAX.AVX-VNNI, the VEX-encoded vpdpbusd on 256 bits (the same reason).
bool has_avx_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
}

// CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25 (AMX-INT8).
bool advertises_amx_int8() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 && (d & (1u << 24)) && (d & (1u << 25));
}

// XCR0 bits 17 and 18 (tile configuration and tile data), readable once OSXSAVE is set.
bool os_enables_tile_state() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
  unsigned lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & (3u << 17)) == (3u << 17);
}

// Linux allocates the 8 KiB tile data state only to processes that ask for it.
bool kernel_grants_tile_data() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

sigjmp_buf probe_jump;
void leave_probe(int) {
  siglongjmp(probe_jump, 1);
}

// Runs the AMX self-test with SIGILL caught: a CPU (or hypervisor) may advertise what it cannot
// run. Called once, before any kernel uses AMX.
std::string self_test_failure() {
  struct sigaction catcher {
  }, saved{};
  catcher.sa_handler = leave_probe;
  sigemptyset(&catcher.sa_mask);
  sigaction(SIGILL, &catcher, &saved);
  std::string failure = "self-test raised SIGILL";
  if (sigsetjmp(probe_jump, 1) == 0) {
    const char* what = amx_int8_self_test();
    failure = what ? std::string("self-test: ") + what : "";
  }
  sigaction(SIGILL, &saved, nullptr);
  return failure;
}

std::string probe_amx_int8() {
  if (!advertises_amx_int8()) return "not advertised";
  if (!os_enables_tile_state()) return "tile state not enabled by the OS (XCR0)";
  if (!kernel_grants_tile_data()) return "kernel refused tile data (arch_prctl)";
  return self_test_failure();
}

Isa best_supported() {
  if (cpu_supports(Isa::kAmxInt8)) return Isa::kAmxInt8;
  if (cpu_supports(Isa::kAvx512Bf16)) return Isa::kAvx512Bf16;
  if (cpu_supports(Isa::kAvx512Vnni)) return Isa::kAvx512Vnni;
  if (cpu_supports(Isa::kAvx512)) return Isa::kAvx512;
  if (cpu_supports(Isa::kAvxVnni)) return Isa::kAvxVnni;
  if (cpu_supports(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kGeneric;
}

Isa from_env() {
  const char* env = std::getenv("PAGEDLLM_ISA");
  Isa want = best_supported();
  if (env && std::strcmp(env, "generic") == 0) want = Isa::kGeneric;
  if (env && std::strcmp(env, "avx2") == 0) want = Isa::kAvx2;
  if (env && std::strcmp(env, "avxvnni") == 0) want = Isa::kAvxVnni;
  if (env && std::strcmp(env, "avx512") == 0) want = Isa::kAvx512;
  if (env && std::strcmp(env, "avx512vnni") == 0) want = Isa::kAvx512Vnni;
  if (env && std::strcmp(env, "avx512bf16") == 0) want = Isa::kAvx512Bf16;
  if (env && std::strcmp(env, "amx") == 0) want = Isa::kAmxInt8;
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
    case Isa::kAvxVnni:
      return "avxvnni";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx512Vnni:
      return "avx512vnni";
    case Isa::kAvx512Bf16:
      return "avx512bf16";
    case Isa::kAmxInt8:
      return "amx";
  }
  return "?";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::kGeneric:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::kAvxVnni:
      return cpu_supports(Isa::kAvx2) && has_avx_vnni();
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
    case Isa::kAvx512Vnni:
      return cpu_supports(Isa::kAvx512) && __builtin_cpu_supports("avx512vnni");
    case Isa::kAvx512Bf16:
      return cpu_supports(Isa::kAvx512Vnni) && has_avx512_bf16();
    case Isa::kAmxInt8:
      return cpu_supports(Isa::kAvx512Bf16) && amx_int8_unusable_reason().empty();
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

const std::string& amx_int8_unusable_reason() {
  static const std::string reason = probe_amx_int8();
  return reason;
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
  add(leaf7_1 && (a1 & (1u << 4)), "avx_vnni");
  add(leaf7 && (c & (1u << 11)), "avx512_vnni");
  add(leaf7_1 && (a1 & (1u << 5)), "avx512_bf16");
  add(leaf7 && (d & (1u << 24)), "amx_tile");
  add(leaf7 && (d & (1u << 25)), "amx_int8");
  if (advertises_amx_int8() && !amx_int8_unusable_reason().empty())
    s += " (amx_int8 unused: " + amx_int8_unusable_reason() + ")";
  return s;
}

}  // namespace pagedllm::cpu
