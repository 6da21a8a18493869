// Dispatch stubs of the reduction and scan loops (defined per capability in
// eager/kernels/cpu/kernels/ReduceOpsKernel.cpp). See Note [Reductions as rows].
#pragma once

#include "eager/core/Tensor.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

/// What a row reduction computes.
enum class RowReduce : uint8_t { Sum, Prod, Max, Min, ArgMax, ArgMin, All, Any, Var };

/// Reduces each row of the contiguous 2-D `in` ([rows, len]) into out[row]
/// (and, for ArgMax/ArgMin, the int64 `indices`; Max/Min with a defined
/// `indices` also write them). `out` is contiguous, of in's dtype (Bool for
/// All/Any). `param` is Var's correction. Sum/Prod see float, double and int64
/// only; Var float and double.
using reduce_rows_fn = void (*)(const Tensor& in, const Tensor& out, const Tensor& indices, RowReduce op,
                                double param);
KILN_DECLARE_DISPATCH(reduce_rows_fn, reduce_rows_stub);

/// Inclusive scan along the middle dim of a contiguous [outer, len, inner]
/// `in` into `out` of the same shape and dtype (float, double or int64).
using scan_fn = void (*)(const Tensor& in, const Tensor& out, int64_t outer, int64_t len, int64_t inner, bool product);
KILN_DECLARE_DISPATCH(scan_fn, scan_stub);

}  // namespace kiln::native
