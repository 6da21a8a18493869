// Dispatch stubs of the ternary and scalar-parameterised pointwise kernels
// (where, clamp, lerp, addcmul, addcdiv, masked_fill), defined per capability
// in eager/kernels/cpu/pointwise/per_capability/TernaryOpsKernel.cpp. Loops compute in the
// iterator's common dtype (float16/bfloat16 in float).
#pragma once

#include "eager/core/Scalar.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

using ternary_fn = void (*)(TensorIterator& iter);
using ternary_scalar_fn = void (*)(TensorIterator& iter, const Scalar& value);
using clamp_scalar_fn = void (*)(TensorIterator& iter, const Scalar& min, const Scalar& max);

/// out = condition ? self : other (inputs: bool condition, then two tensors of the result dtype).
KILN_DECLARE_DISPATCH(ternary_fn, where_stub);
/// out = min(max(self, lo), hi) with tensor bounds; NaN when a bound is NaN.
KILN_DECLARE_DISPATCH(ternary_fn, clamp_stub);
/// The same with scalar bounds (not NaN: the caller fills NaN itself), and one-sided.
KILN_DECLARE_DISPATCH(clamp_scalar_fn, clamp_scalar_stub);
KILN_DECLARE_DISPATCH(ternary_scalar_fn, clamp_min_scalar_stub);
KILN_DECLARE_DISPATCH(ternary_scalar_fn, clamp_max_scalar_stub);
/// self + weight * (end - self), PyTorch's two-sided formula; weight a scalar or a third input.
KILN_DECLARE_DISPATCH(ternary_scalar_fn, lerp_scalar_stub);
KILN_DECLARE_DISPATCH(ternary_fn, lerp_tensor_stub);
/// self + value * tensor1 * tensor2, and self + value * tensor1 / tensor2.
KILN_DECLARE_DISPATCH(ternary_scalar_fn, addcmul_stub);
KILN_DECLARE_DISPATCH(ternary_scalar_fn, addcdiv_stub);
/// out = mask ? value : self (inputs: self, then the bool mask).
KILN_DECLARE_DISPATCH(ternary_scalar_fn, masked_fill_stub);

}  // namespace kiln::native
