// Launching the templates of KernelSources.h on tensors: the strided Indexer,
// device checks, and the grid for a grid-stride loop.
#pragma once

#include <string>
#include <vector>

#include "eager/cuda/CudaStream.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cuda/KernelSources.h"
#include "eager/ops/Tensor.h"

namespace kiln::native::cuda_kernels {

/// The Indexer<N> the templates take, as bytes: data pointers, ndim, sizes and
/// byte strides (innermost dim first). Same layout as the prelude's struct.
template <int N>
struct IndexerParam {
  void* data[N];
  int ndim;
  long long sizes[kMaxDims];
  long long strides[N][kMaxDims];
};

/// The Indexer of a TensorIterator's operands (outputs first), over its
/// coalesced iteration shape.
template <int N>
[[nodiscard]] IndexerParam<N> indexer_of(const TensorIterator& iter);

/// The Indexer of tensors of one shape, each through its own strides.
template <int N>
[[nodiscard]] IndexerParam<N> indexer_of(const std::vector<Tensor>& tensors);

/// Runs `kernel` on the device of `device_tensor`, on the current stream, as a
/// grid-stride loop over `n` elements; `params` are the kernel's parameters.
void launch_elementwise(const KernelInstance& kernel, int device, int64_t n, std::vector<void*> params);
/// Runs a row kernel: one block of 256 threads per row (grid capped).
void launch_rows(const KernelInstance& kernel, int device, int64_t rows, std::vector<void*> params);

/// torch's "Expected all tensors to be on the same device, but found at least two
/// devices, cuda:0 and cpu!" unless every tensor is on `device`, except 0-dim
/// CPU tensors, which are returned copied to `device` (torch accepts them as scalars).
[[nodiscard]] std::vector<Tensor> on_one_device(const std::vector<Tensor>& tensors, const char* op);

/// The CUDA device index of `t` (a CUDA tensor).
[[nodiscard]] int device_of(const Tensor& t);

/// RuntimeError naming `op` and the dtype unless eager CUDA kernels handle it.
void check_kernel_dtype(DType dtype, const char* op);

}  // namespace kiln::native::cuda_kernels
