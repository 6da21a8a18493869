// The CUDA C++ templates of nonzero (and so of masked_select, argwhere and
// mask indexing, which are built on it): a count per chunk, the chunks' first
// rows by one block's prefix sum, and the coordinates written in order
// (Note [nonzero on CUDA]). Same scheme as KernelSources.h; used by
// CudaMaskKernels.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eager/kernels/cuda/KernelSources.h"

namespace kiln::native::cuda_kernels {

/// Elements per chunk of nonzero's passes (a block per chunk): fixed, so the order of the work never depends
/// on the grid.
inline constexpr long long kNonzeroChunk = 8192;

/// nonzero's shape parameter: ndim, then the sizes outermost first (the prelude's kiln::NonzeroShape).
struct NonzeroShapeParam {
  int ndim;
  long long sizes[kMaxDims];
};

/// counts[c] = the number of nonzero elements of chunk c of a contiguous input of `dtype`.
/// Parameters (const T* in, long long n, long long chunk, long long* counts); a block per chunk.
[[nodiscard]] KernelInstance nonzero_count_kernel(DType dtype);
/// counts[c] -> the first result row of chunk c (an exclusive prefix sum, in place) and *total = the sum,
/// by one block. Parameters (long long* counts, long long chunks, long long* total).
[[nodiscard]] KernelInstance nonzero_first_rows_kernel();
/// The coordinates of each nonzero element of chunk c at rows first_rows[c], first_rows[c] + 1, ... in
/// element order. Parameters (const T* in, long long n, long long chunk, const long long* first_rows,
/// long long* out, long long row_stride, long long column_stride, NonzeroShape shape); a block per chunk.
[[nodiscard]] KernelInstance nonzero_fill_kernel(DType dtype);

/// Appends the family "nonzero".
void append_mask_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families);

}  // namespace kiln::native::cuda_kernels
