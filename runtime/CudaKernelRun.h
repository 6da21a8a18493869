// Fused kernels on CUDA tensors (kiln.compile on a CUDA model): the kernel IR
// printed as CUDA C (codegen/cuda), compiled by NVRTC on first use per
// (source, device arch) (eager/cuda/KernelCache.h) and launched on the
// current stream. See Note [Compiled graphs on CUDA].
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen/RowKernel.h"
#include "codegen/cuda/CudaKernelSource.h"
#include "eager/ops/Tensor.h"

namespace kiln::runtime {

// Note [Compiled graphs on CUDA]
// ------------------------------
// A graph whose inputs were captured on a CUDA device compiles for CUDA
// (CompileOptions::target, else the inputs' recorded device): the passes,
// fusion and lowering are the CPU's; each kernel is printed as CUDA C instead
// of LLVM IR (no LLVM module is built), and NVRTC compiles it when a run
// first launches it (cached in memory and on disk per arch). A kernel step
// launches on the current stream of its inputs' device; eager steps go through
// the dispatcher's CUDA kernels, on the same stream, so no synchronisation is
// needed between steps. Outputs are allocated on the device (the memory plan's
// in-place reuse and stores into inputs apply as on the CPU; the
// reduce-overhead arena is one device block: Note [CUDA graphs of a compiled
// graph], CudaGraphReplay.h). A kernel step whose inputs are
// not what it was built for (dtype, layout, a tensor on another device, a CPU
// 0-dim tensor) runs its member ops eagerly, as on the CPU. Errors name the
// kernel and its ops: NVRTC's log for a compile error, the driver's message
// for a launch error; without a driver the first launch raises kiln's
// "Found no NVIDIA driver" error (a CUDA graph only runs on CUDA tensors,
// which cannot exist without one).

struct CudaKernel {
  codegen::cuda::CudaKernelSource source;
  std::string ops;  // the member ops, for error messages
};

/// Launches a pointwise kernel: `data` holds the inputs' then the outputs' device pointers; `sizes` and
/// `strides` (elements, iteration order) as CompiledGraph computes them (empty for a contiguous kernel).
void launch_cuda_pointwise(const CudaKernel& k, const codegen::Kernel& kernel, int device, std::span<void* const> data,
                           int64_t numel, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

/// A row kernel step on CUDA tensors: false when the inputs are not what the kernel was built for
/// (the caller then runs the members eagerly); else `outputs` allocated on the device and the kernel launched.
[[nodiscard]] bool run_cuda_row_kernel(const CudaKernel& k, const codegen::RowKernel& rk,
                                       const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

/// The CUDA device every tensor of `inputs` is on, or -1 when one is not a CUDA tensor or they differ
/// (no inputs: the current device, -1 without a driver).
[[nodiscard]] int common_cuda_device(std::span<const Tensor* const> inputs);

}  // namespace kiln::runtime
