// From a reduction fusion group (passes/fuse_reductions.h) to a row kernel
// (KernelIR.h, Note [Row reduction kernels]): one Load per group input with
// its role, each member's math (PointwiseMath.h, or a Reduce* expr), one
// output per group output.
#pragma once

#include <optional>
#include <vector>

#include "codegen/KernelIR.h"
#include "passes/fuse_reductions.h"

namespace kiln::codegen {

struct RowKernel {
  Kernel kernel;
  int64_t rows = 0, cols = 0;                          // the [rows, cols] space
  int64_t scratch_rows = 0;  // rows of 8-byte scratch per thread (RowSchedule.h; a column kernel's: a piece wide)
  std::vector<std::vector<int64_t>> input_sizes;       // each input's recorded sizes (checked at run time)
  std::vector<std::vector<int64_t>> output_sizes, output_strides;  // outputs are allocated so
};

/// Whether norm node n (layer_norm, rms_norm, their input gradient) joins a row kernel whole on this host,
/// in eager's order and bit for bit (Note [Norms as row groups], passes/fuse_reductions.h): the fusion
/// takes it and the host has FMA (AVX2 / AVX-512), as eager's norm loops.
[[nodiscard]] bool lowers_norm_whole(const ir::Node& n);

/// The row kernel of `group`, or nullopt when some member has no math here.
[[nodiscard]] std::optional<RowKernel> lower_reduction_group(const passes::ReductionGroup& group);

}  // namespace kiln::codegen
