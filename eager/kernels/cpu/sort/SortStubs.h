// Dispatch stub of the sort / topk loop (per_capability/SortKernel.cpp) and the row
// plan both sides share. See Note [Sort order] (SortOps.cpp).
#pragma once

#include <cstdint>

#include "eager/core/ArrayRef.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// The rows a sort works on: every index of the dims other than `dim` is one
/// row of `n` input elements; `k` of them are written per row (n for sort).
/// Strides are in elements; the outer dims list every dim but `dim`, in order.
struct SortRows {
  int64_t rows = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool descending = false;  // topk: largest
  DimVector outer_sizes;
  DimVector in_outer, values_outer, indices_outer;
  int64_t in_stride = 0, values_stride = 0, indices_stride = 0;  // along dim
};

/// values[row, i], indices[row, i] for i < k: the row's k smallest (largest when
/// descending) elements in order and their positions; ties keep input order.
using sort_fn = void (*)(const Tensor& self, const Tensor& values, const Tensor& indices, const SortRows& plan);

KILN_DECLARE_DISPATCH(sort_fn, sort_stub);

}  // namespace kiln::native
