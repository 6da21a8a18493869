// A kernel's schedule (KernelSchedule.h): its text form and cache key.
#include "codegen/KernelSchedule.h"

namespace kiln::codegen {

std::string KernelSchedule::str() const {
  if (*this == KernelSchedule{}) return "default";
  std::string s;
  const auto part = [&](const char* name, int64_t v) {
    s += (s.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(v);
  };
  if (vector_lanes != 0) part("lanes", vector_lanes);
  if (unroll != 1) part("unroll", unroll);
  if (grain != 0) part("grain", grain);
  return s;
}

uint64_t scheduled_kernel_key(const Kernel& k, const KernelSchedule& s) {
  uint64_t h = k.hash();
  if (s.default_code()) return h;
  // FNV-1a over a tag and the two knobs that change the code.
  const uint64_t parts[3] = {0x7363686564ull /* "sched" */, static_cast<uint64_t>(s.vector_lanes),
                             static_cast<uint64_t>(s.unroll)};
  for (uint64_t v : parts) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return h;
}

}  // namespace kiln::codegen
