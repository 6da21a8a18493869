// The CUDA C++ templates of the reducing puts: scatter_reduce's CAS-loop
// reductions (sum, prod, amax, amin into any dtype), index_put through byte
// offsets (several index tensors, masks; assign or accumulate), the offsets
// themselves, and scatter_reduce(mean)'s division by the counts. Same scheme
// as KernelSources.h; used by CudaIndexKernels.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eager/kernels/cuda/KernelSources.h"

namespace kiln::native::cuda_kernels {

/// Operands (dst with stride 0 along dim, index, src) over the index's shape: dst at index (op)= src,
/// `op` one of "sum", "prod", "amax", "amin" (NaN wins), by an atomic compare-and-swap loop.
/// Parameters (ix, n, dim_stride bytes, dim_size, bad).
[[nodiscard]] KernelInstance scatter_reduce_kernel(const std::string& op, DType dtype, DType index);
/// Operands (dst restrided, int64 byte offsets, values) over index_put's result shape: *(dst + offset) = value,
/// or += value (CAS loop) when the int parameter `accumulate` is set. Parameters (ix, n, accumulate).
[[nodiscard]] KernelInstance offset_put_kernel(DType dtype);
/// Operands (int64 offsets, index) over the index's shape: offsets (+)= wrap(index) * stride_bytes, negative
/// indices counting from the end. Parameters (ix, n, size, stride_bytes, accumulate, bad).
[[nodiscard]] KernelInstance index_offsets_kernel(DType index);
/// Operands (target, counts of target's dtype): target /= max(counts, 1), floor division for integers.
[[nodiscard]] KernelInstance mean_divide_kernel(DType dtype);

/// Appends the family "put".
void append_put_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families);

}  // namespace kiln::native::cuda_kernels
