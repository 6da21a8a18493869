// Host detection through LLVM's TargetParser.
#include "codegen/llvm/HostInfo.h"

#include <algorithm>

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>

namespace kiln::codegen {

const HostInfo& host_info() {
  static const HostInfo info = [] {
    HostInfo h;
    h.llvm_version = LLVM_VERSION_STRING;
    h.target_triple = llvm::sys::getProcessTriple();
    h.cpu_name = llvm::sys::getHostCPUName().str();
    for (const auto& entry : llvm::sys::getHostCPUFeatures()) {
      if (entry.getValue()) h.features.push_back(entry.getKey().str());
    }
    std::sort(h.features.begin(), h.features.end());
    return h;
  }();
  return info;
}

}  // namespace kiln::codegen
