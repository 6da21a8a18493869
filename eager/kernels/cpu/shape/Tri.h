// tril/triu's row loop: the plan the ops in Tri.cpp build and the kernel in
// per_capability/TriKernel.cpp runs (per CPU capability).
#pragma once

#include <cstdint>

#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

/// Every matrix row of a (batched) tril/triu: keep columns on the chosen side of
/// diagonal k, zero the rest. Strides in bytes; batch dims outermost first.
struct TriPlan {
  static constexpr int kMaxBatchDims = 16;
  char* dst = nullptr;
  const char* src = nullptr;
  bool in_place = false;  // dst is src: only the zeros are written
  bool lower = true;      // tril keeps j <= i + k; triu keeps j >= i + k
  int64_t k = 0;
  int64_t itemsize = 1;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t dst_row_stride = 0, dst_col_stride = 0;
  int64_t src_row_stride = 0, src_col_stride = 0;
  int nbatch = 0;
  int64_t batch_sizes[kMaxBatchDims] = {};
  int64_t dst_batch_strides[kMaxBatchDims] = {};
  int64_t src_batch_strides[kMaxBatchDims] = {};
};

/// Rows [begin, end) of the plan, counted over batch x rows.
using tri_rows_fn = void (*)(const TriPlan& plan, int64_t begin, int64_t end);
KILN_DECLARE_DISPATCH(tri_rows_fn, tri_rows_stub);

}  // namespace kiln::native
