// Restores the ISA in use when a test leaves, whatever it forced (cpu::set_isa).
#pragma once

#include "kernels/cpu/cpu_features.h"

namespace pagedllm::test {

struct IsaGuard {
  cpu::Isa before = cpu::active_isa();
  ~IsaGuard() { cpu::set_isa(before); }
};

}  // namespace pagedllm::test
