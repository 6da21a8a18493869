// mode="max-autotune": per kernel, a few schedules (codegen/KernelSchedule.h)
// timed on tensors of the graph's own sizes and layouts, the fastest kept.
// See Note [Choosing a kernel's schedule].
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/FusionKernel.h"
#include "codegen/KernelSchedule.h"
#include "codegen/RowKernel.h"
#include "ir/Graph.h"

namespace kiln::runtime {

// Note [Choosing a kernel's schedule]
// -----------------------------------
// At compile time (CompileOptions::max_autotune) each pointwise and row kernel
// step of a CPU graph is run on tensors of its recorded sizes, strides and
// dtypes (inputs filled with values in [-2, 2), integers 1..5), under each
// candidate schedule: for a pointwise kernel first the code variants (host
// and twice the host vector width, unrolled 1, 2 or 4 times; not unrolled
// when a strided kernel has only gathers) at the default split, then the
// best one's splits (the default grain, 8x it, one chunk);
// a row kernel tries only splits (Note [Kernel schedules]); a column kernel
// and a multi-tensor step keep the default. Each candidate is timed as the
// minimum over a few runs (each run enough launches to take about a
// millisecond) after one warm-up (a launch of over 20 ms: the minimum of
// two, the first counted), all candidates of a kernel in one sitting,
// and a schedule other than the default is kept only when it is at least 3%
// faster than the default measured beside it (timing noise otherwise picks
// at random). Every variant compiles through the kernel cache (in memory and
// on disk, keyed with its schedule), and the choice is kept in memory by
// (kernel key, the inputs' and outputs' layouts, the thread count), so the
// same kernel at the same sizes is timed once per process, and on disk
// beside the kernels (Note [Autotune choices on disk], codegen/llvm/
// KernelCache.h), so a later process on this machine takes it untimed. Results never
// depend on the choice: every schedule computes each element exactly as the
// default does.

/// The schedules tried for pointwise kernel k's code (the default first), at the default split; no
/// unrolled ones for a strided kernel without vector loads (its gathers are not unrolled). Without k: all.
[[nodiscard]] std::vector<codegen::KernelSchedule> pointwise_code_candidates(const codegen::Kernel* k = nullptr);
/// The splits tried for a kernel of `elements` elements (the default first; none beyond one chunk).
[[nodiscard]] std::vector<int64_t> grain_candidates(int64_t elements);

/// Given a pointwise kernel and its group's inputs (recorded CPU layouts).
/// Do    autotune_pointwise(fk, inputs).
/// Result the fastest schedule on tensors of those layouts (Note [Choosing a kernel's schedule]).
[[nodiscard]] codegen::KernelSchedule autotune_pointwise(const codegen::FusionKernel& fk,
                                                         const std::vector<const ir::Value*>& inputs);

/// Given a row kernel (not a column kernel). Do autotune_row(rk). Result its fastest split.
[[nodiscard]] codegen::KernelSchedule autotune_row(const codegen::RowKernel& rk);

/// How many kernels this process has timed (the choice cache's misses), for tests.
[[nodiscard]] int64_t autotuned_kernel_count();
/// How many choices this process took from the disk cache instead of timing (Note [Autotune choices on
/// disk], codegen/llvm/KernelCache.h), for tests.
[[nodiscard]] int64_t autotune_choices_from_disk();

}  // namespace kiln::runtime
