// From a fusion group (passes/fuse_pointwise.h) to a kernel (KernelIR.h):
// one Load per group input, each member node's math (PointwiseMath.h), one
// output per group output.
#pragma once

#include <optional>
#include <vector>

#include "codegen/KernelIR.h"
#include "passes/fuse_pointwise.h"

namespace kiln::codegen {

/// True when op node `n` (with fully typed tensor inputs) has kernel math for
/// its dtypes and attributes: fuse_pointwise's `fusible` predicate.
[[nodiscard]] bool has_kernel_math(const ir::Node& n);

struct FusionKernel {
  Kernel kernel;
  std::vector<int64_t> sizes, strides;  // the members' output layout (outputs are allocated so)
  std::vector<size_t> order;            // the dims in iteration order: outermost (largest stride) first
  std::vector<int64_t> shape;           // the iteration shape: sizes[order[i]]
};

/// The kernel of `group`: it iterates the members' output layout in memory
/// order (so outputs are written as one dense run), contiguous (rank 1) when
/// every input has that layout or is a single element, else rank = the
/// shape's rank with strides given at run time. nullopt when some member has
/// no math.
[[nodiscard]] std::optional<FusionKernel> lower_fusion_group(const passes::FusionGroup& group);

}  // namespace kiln::codegen
