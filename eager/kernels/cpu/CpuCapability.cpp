// CPU feature detection for kernel dispatch.
#include "eager/kernels/cpu/CpuCapability.h"

#include <cstdlib>
#include <string>

namespace kiln {

namespace {

CpuCapability detect() {
  CpuCapability best = CpuCapability::Default;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = CpuCapability::AVX2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    best = CpuCapability::AVX512;
  }
#endif
  if (const char* cap = std::getenv("KILN_CPU_CAPABILITY")) {
    const std::string s(cap);
    CpuCapability limit = best;
    if (s == "default") limit = CpuCapability::Default;
    if (s == "avx2") limit = CpuCapability::AVX2;
    if (s == "avx512") limit = CpuCapability::AVX512;
    if (limit < best) best = limit;
  }
  return best;
}

}  // namespace

CpuCapability cpu_capability() {
  static const CpuCapability c = detect();
  return c;
}

std::string_view cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::Default: return "default";
    case CpuCapability::AVX2: return "avx2";
    case CpuCapability::AVX512: return "avx512";
  }
  return "?";
}

}  // namespace kiln
