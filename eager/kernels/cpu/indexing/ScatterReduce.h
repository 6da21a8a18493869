// scatter_reduce's steps over a device's put (Note [scatter_reduce on any device]).
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "eager/kernels/cpu/indexing/IndexStubs.h"
#include "eager/ops/Tensor.h"

namespace kiln::native::indexing {

// Note [scatter_reduce on any device]
// -----------------------------------
// scatter_reduce(self, dim, index, src, reduce, include_self) is, on every
// device: (without include_self) the reduction's identity put at each indexed
// position; src reduced into those positions; for "mean", a count per position
// (1 for self when included, plus 1 per value landing there) put the same way,
// and the sums divided by max(count, 1) (floor division for integers, so
// positions nothing lands on keep self's value). Only the put and the division
// are the device's: the CPU's loops (ScatterGather.cpp) or the CUDA kernels
// (eager/kernels/cuda/CudaIndexKernels.cpp), so the two cannot disagree on the
// steps, the identities or the refusals.
struct ScatterReducePuts {
  /// target at (index along dim) op= src, or = `value` where src is null; checks the index values.
  std::function<void(const Tensor& target, int64_t dim, const Tensor& index, const Tensor* src,
                     const std::optional<Scalar>& value, PutReduce reduce)>
      put;
  /// target = target / max(counts, 1) elementwise (floor division for integers); counts has target's shape.
  std::function<void(const Tensor& target, const Tensor& counts)> divide_by_counts;
};

/// Reduces src into `target` (holding self's values) at index along the wrapped `dim`; checks done.
/// `device` names torch's kernel in refusals ("cpu", "cuda").
void scatter_reduce_into(const Tensor& target, int64_t dim, const Tensor& index, const Tensor& src,
                         std::string_view reduce, bool include_self, const ScatterReducePuts& puts,
                         const char* device);

}  // namespace kiln::native::indexing
