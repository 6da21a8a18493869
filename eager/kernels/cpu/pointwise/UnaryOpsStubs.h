// Dispatch stubs of the unary pointwise kernels (defined per capability in
// eager/kernels/cpu/pointwise/per_capability/UnaryOpsKernel.cpp). The op lists are X-macros so
// the stubs, their definitions and their registrations are written once each.
#pragma once

#include <optional>

#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

using unary_fn = void (*)(TensorIterator& iter);

/// Ops whose integer and bool inputs compute in the default float dtype
/// (exp(int) is float32, as in PyTorch). The loop sees a floating common dtype.
#define KILN_FORALL_UNARY_FLOAT_OPS(_) \
  _(reciprocal) _(sqrt) _(rsqrt) _(exp) _(exp2) _(expm1) _(log) _(log2) _(log10) _(log1p) _(sin) _(cos) _(tan) \
  _(asin) _(acos) _(atan) _(sinh) _(cosh) _(asinh) _(acosh) _(atanh) _(tanh) _(sigmoid) _(erf) _(erfc) _(erfinv)

/// Ops that keep their input's dtype (the loop sees self's dtype; bool where PyTorch allows it).
#define KILN_FORALL_UNARY_SAME_DTYPE_OPS(_) \
  _(neg) _(abs) _(sign) _(floor) _(ceil) _(round) _(trunc) _(frac) _(square)

/// Predicates: the loop reads input(0)'s dtype and writes bool.
#define KILN_FORALL_UNARY_PREDICATES(_) _(isnan) _(isinf) _(isfinite) _(isposinf) _(isneginf) _(signbit)

#define KILN_DECLARE_UNARY_STUB_(op) KILN_DECLARE_DISPATCH(unary_fn, op##_stub);
KILN_FORALL_UNARY_FLOAT_OPS(KILN_DECLARE_UNARY_STUB_)
KILN_FORALL_UNARY_SAME_DTYPE_OPS(KILN_DECLARE_UNARY_STUB_)
KILN_FORALL_UNARY_PREDICATES(KILN_DECLARE_UNARY_STUB_)
#undef KILN_DECLARE_UNARY_STUB_

/// round(x * 10^decimals) / 10^decimals (decimals may be negative), half to even.
using round_decimals_fn = void (*)(TensorIterator& iter, int64_t decimals);
KILN_DECLARE_DISPATCH(round_decimals_fn, round_decimals_stub);

/// nan_to_num: NaN, +inf and -inf replaced (the defaults, resolved per dtype by the caller).
using nan_to_num_fn = void (*)(TensorIterator& iter, double nan, std::optional<double> posinf,
                               std::optional<double> neginf);
KILN_DECLARE_DISPATCH(nan_to_num_fn, nan_to_num_stub);

/// logit(x) = log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given.
using logit_fn = void (*)(TensorIterator& iter, std::optional<double> eps);
KILN_DECLARE_DISPATCH(logit_fn, logit_stub);

}  // namespace kiln::native
