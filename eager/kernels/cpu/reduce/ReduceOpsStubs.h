// Dispatch stubs of the reduction and scan loops (defined per capability in
// eager/kernels/cpu/reduce/per_capability/ReduceOpsKernel.cpp). See Note [Reductions as rows].
#pragma once

#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// What a reduction computes. SumSquares and SumAbs (float and double only)
/// sum x * x and |x|: the 2- and 1-norms in one pass over x.
enum class RowReduce : uint8_t { Sum, Prod, Max, Min, All, Any, Var, SumSquares, SumAbs };

/// Reduces the middle dim of the contiguous 3-D `in` ([batch, len, inner])
/// into out[b * inner + k]; Max/Min with a defined int64 `indices` also write
/// the position along `len` of the first extreme (the first NaN).
/// inner == 1 is a row reduction, inner > 1 reduces across rows with the
/// inner dim vectorised. `out` is contiguous, of in's dtype (Bool for
/// All/Any). `param` is Var's correction. Sum/Prod see float, double and
/// int64 only; Var float and double.
using reduce_fn = void (*)(const Tensor& in, const Tensor& out, const Tensor& indices, RowReduce op, double param);
KILN_DECLARE_DISPATCH(reduce_fn, reduce_stub);

/// The sum of x * x (SumSquares) or of |x| (SumAbs) over `dims` (empty: all),
/// in x's dtype (float or double), shaped as sum(x, dims, keepdim) is.
/// Defined in ReduceOps.cpp; linalg_vector_norm's 1- and 2-norms.
Tensor sum_of_terms(const Tensor& x, IntArrayRef dims, bool keepdim, RowReduce op);

/// Inclusive scan along the middle dim of a contiguous [outer, len, inner]
/// `in` into `out` of the same shape and dtype (float, double or int64).
using scan_fn = void (*)(const Tensor& in, const Tensor& out, int64_t outer, int64_t len, int64_t inner, bool product);
KILN_DECLARE_DISPATCH(scan_fn, scan_stub);

}  // namespace kiln::native
