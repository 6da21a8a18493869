// Launching the templates of KernelSources.h on tensors: the strided Indexer,
// device checks, and the grid for a grid-stride loop.
#pragma once

#include <optional>
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

/// A contiguous CUDA tensor with t's values in `dtype` (t itself when it already is one).
[[nodiscard]] Tensor contiguous_as(const Tensor& t, DType dtype);

/// Note [Bad indices on CUDA]
/// The indexing and loss kernels check every index on the device: a bad one is
/// never read, and is stored in a 2-element int64 flag (bad[0] = 1, bad[1] = the
/// index). The launcher then reads the flag back (one 16-byte device-to-host
/// copy, which waits for the kernel) and raises the CPU kernel's error, where
/// torch's CUDA kernels would trip a device assert that poisons the context.
[[nodiscard]] Tensor bad_index_flag(const Device& device);
/// The bad index the kernels stored in `flag`, if any (waits for them).
[[nodiscard]] std::optional<int64_t> read_bad_index(const Tensor& flag);

/// torch's "Expected all tensors to be on the same device, but found at least two
/// devices, cuda:0 and cpu!" unless every tensor is on `device`, except 0-dim
/// CPU tensors, which are returned copied to `device` (torch accepts them as scalars).
[[nodiscard]] std::vector<Tensor> on_one_device(const std::vector<Tensor>& tensors, const char* op);

/// The CUDA device index of `t` (a CUDA tensor).
[[nodiscard]] int device_of(const Tensor& t);

/// RuntimeError naming `op` and the dtype unless eager CUDA kernels handle it.
void check_kernel_dtype(DType dtype, const char* op);

}  // namespace kiln::native::cuda_kernels
