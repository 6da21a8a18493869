// Dispatch stubs of the special-function and two-argument float pointwise ops
// (lgamma, digamma, polygamma, sinc, deg2rad, rad2deg; atan2, hypot,
// logaddexp, logaddexp2, copysign, nextafter, xlogy, heaviside), defined per
// capability in per_capability/SpecialOpsKernel.cpp. X-macros as in UnaryOpsStubs.h.
#pragma once

#include <cstdint>

#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/kernels/cpu/pointwise/UnaryOpsStubs.h"

namespace kiln::native {

/// One-input ops whose integer and bool inputs compute in the default float dtype.
#define KILN_FORALL_SPECIAL_UNARY_OPS(_) _(lgamma) _(digamma) _(sinc) _(deg2rad) _(rad2deg)

/// Two-input ops on the iterator's common dtype (see SpecialOps.cpp for each op's promotion).
#define KILN_FORALL_SPECIAL_BINARY_OPS(_) \
  _(atan2) _(hypot) _(logaddexp) _(logaddexp2) _(copysign) _(nextafter) _(xlogy) _(heaviside)

using special_binary_fn = void (*)(TensorIterator& iter);

#define KILN_DECLARE_SPECIAL_STUB_(op) KILN_DECLARE_DISPATCH(unary_fn, op##_stub);
KILN_FORALL_SPECIAL_UNARY_OPS(KILN_DECLARE_SPECIAL_STUB_)
#undef KILN_DECLARE_SPECIAL_STUB_
#define KILN_DECLARE_SPECIAL_STUB_(op) KILN_DECLARE_DISPATCH(special_binary_fn, op##_stub);
KILN_FORALL_SPECIAL_BINARY_OPS(KILN_DECLARE_SPECIAL_STUB_)
#undef KILN_DECLARE_SPECIAL_STUB_

/// polygamma(n, x): the n-th derivative of digamma (n >= 0, checked by the caller).
using polygamma_fn = void (*)(TensorIterator& iter, int64_t n);
KILN_DECLARE_DISPATCH(polygamma_fn, polygamma_stub);

}  // namespace kiln::native
