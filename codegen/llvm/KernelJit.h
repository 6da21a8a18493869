// Lowers kernel IR to LLVM IR and compiles it with ORC LLJIT at O3 for the
// host CPU; compiled kernels are cached in memory and on disk by structural
// hash. See Note [The kernel calling convention] and Note [The kernel cache]
// (KernelCache.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/KernelIR.h"
#include "codegen/KernelSchedule.h"
#include "codegen/llvm/KernelCachePrune.h"

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
  std::string llvm_ir;              // the optimised modules' text, when asked for (kernels from a cache: none)
};

/// Names each kernel `kernel_<key>` and returns their entry points: from the
/// in-memory cache, else the disk cache, else compiled (each kernel on its own
/// module, so each is one disk entry: Note [The kernel cache]).
/// `keep_llvm_ir` keeps the optimised modules' text (KILN_LOGS=codegen).
/// `schedules`: one per kernel (empty: the default for all); the key is
/// scheduled_kernel_key(kernel, schedule) (Note [Kernel schedules]).
[[nodiscard]] CompiledKernels compile_kernels(std::vector<Kernel>& kernels, bool keep_llvm_ir = false,
                                              const std::vector<KernelSchedule>& schedules = {});

/// Empties the in-memory cache, so the next compile of a kernel reads the disk
/// cache again (for tests). Code already loaded stays loaded: entry points held
/// by compiled graphs stay valid.
void forget_compiled_kernels();

/// Prunes the disk cache's current directory for this process's environment (Note [Pruning the kernel cache]).
KernelCachePruneResult prune_kernel_disk_cache(int64_t max_bytes);

/// max-autotune's choice stored under `choice_key` in the disk cache for this process's environment
/// (Note [Autotune choices on disk], KernelCache.h), or nullopt.
[[nodiscard]] std::optional<std::string> load_autotune_choice(const std::string& choice_key);
/// Stores a choice there (nothing when the disk cache is off; failures counted, never raised).
void store_autotune_choice(const std::string& choice_key, const std::string& choice);

/// Kernels compiled in this process so far (the cache's size), for tests.
[[nodiscard]] int64_t compiled_kernel_count();

}  // namespace kiln::codegen
