// The CUDA C++ templates of the indexing kernels: gather (serving gather,
// index_select and embedding), scatter (assign, or add with atomics: scatter,
// scatter_add, index_add, index_put) and masked_fill. Same scheme as
// KernelSources.h. The copies move elements by size (a 1-, 2-, 4- or 8-byte
// word), so one instantiation serves every dtype of that size; the adds are
// per dtype. Each kernel reads its operands through an Indexer whose "indexed"
// operand is restrided so that its indexed dim has stride 0 (see
// Note [Indexing through a restrided operand] in CudaIndexKernels.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eager/kernels/cuda/KernelSources.h"

namespace kiln::native::cuda_kernels {

/// out[i] = self[i with the dim coordinate replaced by index[i]] for elements of `element_size` bytes.
[[nodiscard]] KernelInstance gather_kernel(int element_size, DType index);
/// self[i with the dim coordinate replaced by index[i]] = src[i] (element_size bytes).
[[nodiscard]] KernelInstance scatter_kernel(int element_size, DType index);
/// self[...] += alpha * src[i] with atomic adds (float32/64, float16, bfloat16, int32, int64).
[[nodiscard]] KernelInstance scatter_add_kernel(DType dtype, DType index);
/// The dtypes scatter_add_kernel handles.
[[nodiscard]] bool has_atomic_add(DType dtype);
/// self[i] = value where mask[i] (element_size bytes).
[[nodiscard]] KernelInstance masked_fill_kernel(int element_size);

/// Appends the families "gather", "scatter", "masked_fill".
void append_index_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families);

}  // namespace kiln::native::cuda_kernels
