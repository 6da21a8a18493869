// The CUDA C++ templates of the nn kernels: layer_norm / rms_norm forward and
// backward, softmax / log_softmax backward, nll_loss forward and backward, and
// the embedding backward. Same scheme as KernelSources.h: each function returns
// one instantiation (its extern "C" name and body); the prelude comes from
// module_source(). Floating dtypes only (float32, float64, float16, bfloat16);
// the half types compute in float, float64 in double.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eager/kernels/cuda/KernelSources.h"

namespace kiln::native::cuda_kernels {

/// One block per row of a contiguous [rows, cols] input: y, mean (layer_norm) and rstd.
[[nodiscard]] KernelInstance norm_forward_kernel(DType dtype);
/// The input's gradient of layer_norm (mean given) or rms_norm (mean null), one block per row.
[[nodiscard]] KernelInstance norm_backward_input_kernel(DType dtype);
/// The weight's (x given) or bias's (x null) gradient: deterministic column sums.
[[nodiscard]] KernelInstance norm_backward_params_kernel(DType dtype);
/// softmax / log_softmax backward from the forward's output, one block per row.
[[nodiscard]] KernelInstance softmax_backward_kernel(bool log, DType dtype);
/// nll_loss forward (one block) or backward (grid-stride over the batch); targets int64 or uint8.
[[nodiscard]] KernelInstance nll_loss_kernel(bool backward, DType dtype, DType target);
/// The embedding backward's segment sums (Note [Deterministic embedding backward]).
[[nodiscard]] KernelInstance embedding_backward_kernel(DType dtype);

/// Appends the families "norm", "softmax_backward", "nll_loss", "embedding_backward".
void append_nn_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families);

}  // namespace kiln::native::cuda_kernels
