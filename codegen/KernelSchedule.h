// How one kernel is lowered and run: its vector width, how many vectors an
// iteration of its inner loop computes, and how finely the runtime splits it
// across threads. The default is the schedule every kernel had before
// mode="max-autotune"; that mode tries a few others per kernel on the graph's
// sizes and keeps the fastest (runtime/KernelAutotune.h). See Note [Kernel
// schedules].
#pragma once

#include <cstdint>
#include <string>

#include "codegen/KernelIR.h"

namespace kiln::codegen {

// Note [Kernel schedules]
// -----------------------
// A schedule changes how a kernel's elements are visited, never what any
// element computes, so every schedule gives the default's results bit for bit:
//  - `vector_lanes`: a multiple of the host's width (host_vector_lanes()). A
//    wider vector is legalised by LLVM into several host vectors, and a
//    vector-math call is split into the library's own width either way
//    (KernelLowering's call_math), so each lane computes the same function
//    with the same fma contraction (Fma lowers to llvm.fma from 8 lanes up,
//    and the host width is at least the default's). Narrower vectors are not
//    offered: libmvec's 4-lane functions are other code than its 8-lane ones.
//  - `unroll`: vectors per iteration of a pointwise kernel's main loop (then
//    single vectors, then one masked tail, as before); a strided kernel's
//    gathering loop is not unrolled, only its vector-load loop.
//  - `grain`: elements (a row kernel: whole rows' elements) per parallel
//    chunk; 0 is kGrainSize. Chunks cut the iteration space between
//    elements or rows, which a pointwise or row kernel computes independently.
// Row and column kernels take only `grain`: their folds are in eager's order
// at eager's vector width (RowLowering.cpp), and a column kernel's pieces are
// cut as eager cuts its columns, so they keep the host width, no unrolling and
// (columns) the default split. `vector_lanes` and `unroll` change the code and
// so the kernel cache's key (`scheduled_kernel_key`); `grain` is the runtime's
// and is not part of it. The default schedule's key is the kernel's own hash,
// so the default mode's cache entries are those of before.
struct KernelSchedule {
  int vector_lanes = 0;  // 0: host_vector_lanes()
  int unroll = 1;        // vectors per main-loop iteration (pointwise kernels)
  int64_t grain = 0;     // elements per parallel chunk; 0: kGrainSize

  /// True when the compiled code is the default's (`grain` aside).
  [[nodiscard]] bool default_code() const { return vector_lanes == 0 && unroll == 1; }
  [[nodiscard]] bool operator==(const KernelSchedule& o) const {
    return vector_lanes == o.vector_lanes && unroll == o.unroll && grain == o.grain;
  }
  /// "lanes=16 unroll=2 grain=262144" ("default" for the default schedule).
  [[nodiscard]] std::string str() const;
};

/// The kernel cache's key for `k` compiled with `s`: k.hash() when s's code is the default's, else
/// k.hash() mixed with the vector width and unroll factor (Note [Kernel schedules]).
[[nodiscard]] uint64_t scheduled_kernel_key(const Kernel& k, const KernelSchedule& s);

}  // namespace kiln::codegen
