// The CUDA C++ templates of the fused optimizer updates (Adam/AdamW, SGD with
// momentum), element-wise over one contiguous parameter, in the parameter's
// dtype (float32 or float64) and in the CPU kernels' operation order
// (eager/kernels/cpu/optim/FusedOptimizers.cpp). Same scheme as KernelSources.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eager/kernels/cuda/KernelSources.h"

namespace kiln::native::cuda_kernels {

/// One Adam / AdamW step of one parameter (max_exp_avg_sq null without amsgrad).
[[nodiscard]] KernelInstance adam_kernel(DType dtype);
/// One SGD step of one parameter (momentum buffer null without momentum).
[[nodiscard]] KernelInstance sgd_kernel(DType dtype);

/// Appends the family "optim".
void append_optim_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families);

}  // namespace kiln::native::cuda_kernels
