// Running one compiled row kernel (codegen/RowKernel.h) on tensors: the
// run-time check that the inputs are what it was built for, its outputs, and
// its rows (a column kernel: pieces of its columns) split across kiln's
// thread pool, each thread with its scratch rows.
#pragma once

#include <vector>

#include "codegen/RowKernel.h"
#include "codegen/llvm/KernelJit.h"
#include "eager/ops/Tensor.h"

namespace kiln::runtime {

/// Given the row kernel `rk`, its entry point, one tensor per kernel input and the elements per parallel
/// chunk (0: kGrainSize, as eager's row loops; a column kernel ignores it: Note [Kernel schedules]).
/// Do    run_row_kernel(rk, fn, inputs, outputs, grain).
/// Result true and `outputs` (one per kernel output, laid out as recorded) computed; false, with
///        nothing run, when an input's dtype, sizes or density differ from the recorded ones (the
///        caller runs the group's nodes eagerly instead).
[[nodiscard]] bool run_row_kernel(const codegen::RowKernel& rk, codegen::KernelFn fn, const std::vector<Tensor>& inputs,
                                  std::vector<Tensor>& outputs, int64_t grain = 0);

}  // namespace kiln::runtime
