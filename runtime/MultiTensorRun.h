// A multi-tensor kernel step's launch: one contiguous kernel over several
// members' elements laid end to end, one parallel loop
// (passes Note [Multi-tensor kernel steps]).
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/llvm/KernelJit.h"

namespace kiln::runtime {

/// One member of a multi-tensor launch: its inputs' then outputs' data pointers and its element count.
struct MultiTensorMember {
  void** data = nullptr;
  int64_t numel = 0;
};

/// Given `fn`, a contiguous rank-1 kernel (Note [The kernel calling convention]), and its members.
/// Do    run_multi_tensor(fn, members).
/// Result every member's elements [0, numel) computed: the members' elements are one range split across
///        kiln's thread pool at eager's grain; a chunk crossing members calls `fn` once per member it
///        covers. A kernel's result never depends on where its range was cut, so each member's
///        values equal a launch of its own.
void run_multi_tensor(codegen::KernelFn fn, const std::vector<MultiTensorMember>& members);

}  // namespace kiln::runtime
