// The eager CUDA pointwise kernels' math from the compiler's table
// (Note [Eager CUDA pointwise math from the compiler's table],
// eager/kernels/cuda/PointwiseMath.h): a request (op, dtypes, alpha,
// approximate, threshold) -> the op's one-node kernel IR (codegen/PointwiseMath.h) ->
// CUDA C with eager/kernels/cuda's Indexer ABI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eager/kernels/cuda/PointwiseMath.h"

namespace kiln::codegen::cuda {

/// The kernel for `request`, or nullopt where the table does not cover it. Cached per request.
[[nodiscard]] std::optional<native::cuda_kernels::KernelInstance> eager_pointwise_kernel(
    const native::cuda_kernels::PointwiseKernelRequest& request);

/// Installs eager_pointwise_kernel as eager/kernels/cuda's generator (idempotent; kiln._C calls it at load).
void install_eager_pointwise_kernels();

/// One generated eager kernel for every (op, dtype) the eager CUDA table lists (each dtype the boxed
/// kernel accepts, with the dtypes its iterator hands the kernel), with what each was generated for;
/// `uncovered` gets "op dtype" for the pairs the table leaves to the op's template.
struct EagerPointwiseCoverage {
  std::vector<std::string> what;  // "add float16 -> float16"
  std::vector<native::cuda_kernels::KernelInstance> kernels;
  std::vector<std::string> uncovered;
};
[[nodiscard]] EagerPointwiseCoverage all_eager_pointwise_kernels();

}  // namespace kiln::codegen::cuda
