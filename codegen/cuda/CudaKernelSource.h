// A kernel of the kernel IR (KernelIR.h: pointwise or row) printed as one
// CUDA C translation unit for NVRTC, with two entry points: one with 32-bit
// index math, one with 64-bit. See Note [CUDA kernel arguments] and
// Note [CUDA row kernels].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/KernelIR.h"

namespace kiln::codegen::cuda {

// Note [CUDA kernel arguments]
// ----------------------------
// A generated kernel takes one struct by value, every field 8 bytes, so the
// host fills it as an array of 64-bit words (runtime/CudaKernelRun.cpp):
//   pointwise: the inputs' then the outputs' data pointers, numel, then
//              sizes[rank] and strides[inputs][rank] (elements; iteration
//              order, innermost last; a broadcast dim has stride 0). A
//              contiguous kernel (Note [The pointwise kernel IR]) reads the
//              sizes and strides not at all.
//   row:       the inputs' then the outputs' data pointers, rows, cols.
// One thread per element in a grid-stride loop (pointwise), one block (or, for
// rows of at most kCudaWarpRowCols, one warp) per row in a grid-stride loop over
// rows (row kernels). `<name>_i32` does its index
// math in 32-bit ints, which the launcher picks when every index it forms
// fits (numel plus one grid's worth of threads, and each input's farthest
// element, below 2^31); `<name>_i64` in 64-bit.

/// Threads per block of every generated kernel.
inline constexpr int kCudaBlock = 256;
/// Row kernels run a warp per row up to this many columns, a block per row beyond (Note [CUDA row kernels]).
inline constexpr int kCudaWarpRowCols = 256;

struct CudaKernelSource {
  std::string source;                // the prelude and the kernel: one NVRTC program
  std::string entry_i32, entry_i64;  // extern "C" names
  int64_t argument_words = 0;        // 8-byte words of the argument struct (Note [CUDA kernel arguments])
};

/// `k` (named: k.name set) printed as CUDA C.
[[nodiscard]] CudaKernelSource print_cuda_kernel(const Kernel& k);

/// Several kernels in one translation unit (one prelude): for tests that compile many at once.
[[nodiscard]] std::string cuda_module_source(const std::vector<Kernel>& kernels);

}  // namespace kiln::codegen::cuda
