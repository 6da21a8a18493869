// A pointwise kernel's CPU launch: its inputs' strides in iteration order and
// its elements (or rows) split across kiln's thread pool. CompiledGraph's
// kernel steps and the autotuner's timings (KernelAutotune.h) launch through it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "codegen/FusionKernel.h"
#include "codegen/llvm/KernelJit.h"
#include "eager/ops/Tensor.h"

namespace kiln::runtime {

/// A strided kernel's iteration sizes (the kernel's shape; {1} for 0-dim) and each input's strides in
/// elements along them (input-major; 0 broadcasts: Note [The kernel calling convention]). A contiguous
/// kernel takes neither: both empty.
struct IterationStrides {
  std::vector<int64_t> sizes, strides;
};

/// The iteration sizes and strides of `fk` over `inputs` (one per kernel input).
[[nodiscard]] IterationStrides iteration_strides(const codegen::FusionKernel& fk, std::span<const Tensor* const> inputs);

/// Runs CPU kernel `fn` of `fk` over its whole iteration space (numel > 0) on `data` (inputs' then outputs'
/// pointers), chunks of about `grain` elements (0: kGrainSize; a strided kernel of rank > 1: whole rows of
/// that many elements) across the thread pool.
void launch_cpu_pointwise(codegen::KernelFn fn, const codegen::FusionKernel& fk, void** data,
                          const IterationStrides& at, int64_t grain);

}  // namespace kiln::runtime
