// repeat_interleave's copy loop: the plan Repeat.cpp builds and the kernel in
// per_capability/RepeatKernel.cpp runs (per CPU capability).
#pragma once

#include <cstdint>

#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

/// A contiguous source viewed as (outer, n, inner) becomes the contiguous
/// destination (outer, total, inner): block i along the middle dim is written
/// repeats[i] times, starting at offsets[i] (the exclusive prefix sum).
struct InterleavePlan {
  char* dst = nullptr;
  const char* src = nullptr;
  int64_t itemsize = 1;
  int64_t outer = 1;
  int64_t n = 0;
  int64_t inner = 1;
  int64_t total = 0;
  const int64_t* repeats = nullptr;
  const int64_t* offsets = nullptr;
};

/// Blocks [begin, end) of the plan, counted over outer x n.
using interleave_blocks_fn = void (*)(const InterleavePlan& plan, int64_t begin, int64_t end);
KILN_DECLARE_DISPATCH(interleave_blocks_fn, interleave_blocks_stub);

}  // namespace kiln::native
