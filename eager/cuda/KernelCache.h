// Compiled CUDA kernels: NVRTC on first use, cached in memory and on disk per device arch.
#pragma once

#include <string>

#include "eager/cuda/CudaStream.h"

namespace kiln::cuda {

/// The kernel `kernel_name` (an extern "C" __global__ function of `source`)
/// compiled for `device`'s arch. The first call per (source, arch) compiles with
/// NVRTC to a cubin, unless the disk cache has it: $KILN_CUDA_CACHE_DIR, else
/// $XDG_CACHE_HOME/kiln/cuda, else ~/.cache/kiln/cuda, one file per arch and
/// source hash, written atomically and checked by size and a hash of its bytes.
[[nodiscard]] CUfunction get_kernel(int device, const std::string& source, const std::string& kernel_name);

/// Launches `fn` on `stream` with a 1-D grid.
void launch_kernel(CUfunction fn, unsigned grid, unsigned block, unsigned shared_bytes, const Stream& stream,
                   void** params);

/// Number of modules compiled by NVRTC (not served from a cache) in this process.
[[nodiscard]] int64_t nvrtc_compile_count();

}  // namespace kiln::cuda
