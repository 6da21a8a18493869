// What LLVM knows about this machine: its version, the host triple, CPU name
// and features. The JIT (codegen/llvm) targets exactly this CPU.
#pragma once

#include <string>
#include <vector>

namespace kiln::codegen {

struct HostInfo {
  std::string llvm_version;            // "19.1.7"
  std::string target_triple;           // "x86_64-pc-linux-gnu"
  std::string cpu_name;                // "znver3", "skylake-avx512", ...
  std::vector<std::string> features;   // enabled CPU features, sorted: "avx2", "fma", ...
};

/// Asks LLVM about the host (computed once, then cached).
[[nodiscard]] const HostInfo& host_info();

}  // namespace kiln::codegen
