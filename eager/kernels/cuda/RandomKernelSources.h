// The CUDA C++ templates of the random kernels: bernoulli with one p (dropout's
// keep-mask), uniform and normal, drawing Philox4x32-10 words exactly as the CPU kernels
// do (Note [Random groups], eager/kernels/random/Philox.h), so a (seed, offset)
// gives the same numbers on both devices. See Note [CUDA random numbers]
// (CudaRandomKernels.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eager/kernels/cuda/KernelSources.h"

namespace kiln::native::cuda_kernels {

/// out[e] = (word e < threshold || always) in `dtype`, over a contiguous out.
[[nodiscard]] KernelInstance bernoulli_kernel(DType dtype);
/// out[e] = from + range * u, u uniform in [0, 1) on the dtype's mantissa (floating dtypes).
[[nodiscard]] KernelInstance uniform_kernel(DType dtype);

/// out[e] = mean + std * z, z standard normal by Box-Muller over the CPU's uniform pairs.
[[nodiscard]] KernelInstance normal_kernel(DType dtype);

/// Appends the family "random".
void append_random_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families);

}  // namespace kiln::native::cuda_kernels
