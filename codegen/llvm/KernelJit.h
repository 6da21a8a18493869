// Lowers kernel IR to LLVM IR and compiles it with ORC LLJIT at O3 for the
// host CPU; compiled kernels are cached in memory by structural hash.
// See Note [The kernel calling convention].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/KernelIR.h"

namespace kiln::codegen {

// Note [The kernel calling convention]
// ------------------------------------
// Every kernel is `void kernel_<hash>(void** data, const int64_t* sizes,
// const int64_t* strides, int64_t begin, int64_t end)`: `data` holds the
// inputs' pointers then the outputs'; `sizes` the kernel's `rank` iteration
// sizes; `strides` each input's `rank` strides in elements (input-major; 0
// broadcasts). Outputs are contiguous. A rank-1 kernel computes elements
// [begin, end); a rank-R kernel (R > 1) computes rows [begin, end) of the
// iteration space seen as (sizes[0] * ... * sizes[R-2]) rows of sizes[R-1].
// So a caller splits [0, rows) across threads. A row kernel (Kernel::rows)
// has sizes {rows, cols}, no strides, and takes its calling thread's scratch
// rows (codegen/RowSchedule.h) through the `strides` pointer. Elements are computed
// host_vector_lanes() at a time; a row's tail is one masked vector, so the
// result never depends on where a range was cut.
using KernelFn = void (*)(void** data, const int64_t* sizes, const int64_t* strides, int64_t begin, int64_t end);

struct CompiledKernels {
  std::vector<KernelFn> functions;  // one per kernel given, in order
  std::string llvm_ir;              // the optimised module's text, when asked for (empty when all were cached)
};

/// Compiles every kernel not already in the cache in one LLVM module (once),
/// names each `kernel_<hash>`, and returns their entry points.
/// `keep_llvm_ir` keeps the optimised module's text (KILN_LOGS=codegen).
[[nodiscard]] CompiledKernels compile_kernels(std::vector<Kernel>& kernels, bool keep_llvm_ir = false);

/// Kernels compiled in this process so far (the cache's size), for tests.
[[nodiscard]] int64_t compiled_kernel_count();

}  // namespace kiln::codegen
