// Dispatch stubs of the binary arithmetic kernels (defined per capability in
// eager/kernels/cpu/pointwise/per_capability/BinaryOpsKernel.cpp and PowKernel.cpp). Each loop
// computes in the iterator's common dtype; float16/bfloat16 compute in float.
#pragma once

#include "eager/core/Scalar.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

using binary_fn = void (*)(TensorIterator& iter);
using binary_alpha_fn = void (*)(TensorIterator& iter, const Scalar& alpha);
using unary_scalar_fn = void (*)(TensorIterator& iter, const Scalar& value);

/// out = self + alpha * other (sub is add with -alpha, as in PyTorch).
KILN_DECLARE_DISPATCH(binary_alpha_fn, add_stub);
KILN_DECLARE_DISPATCH(binary_fn, mul_stub);
/// True division (floating common dtype).
KILN_DECLARE_DISPATCH(binary_fn, div_true_stub);
/// Division rounded toward zero / toward -inf; RuntimeError "ZeroDivisionError" for integers.
KILN_DECLARE_DISPATCH(binary_fn, div_trunc_stub);
KILN_DECLARE_DISPATCH(binary_fn, div_floor_stub);
/// Python's % (the sign of the divisor) and C's fmod (the sign of the dividend).
KILN_DECLARE_DISPATCH(binary_fn, remainder_stub);
KILN_DECLARE_DISPATCH(binary_fn, fmod_stub);
/// NaN-propagating maximum/minimum, and fmax/fmin (NaN ignored when the other is a number).
KILN_DECLARE_DISPATCH(binary_fn, maximum_stub);
KILN_DECLARE_DISPATCH(binary_fn, minimum_stub);
KILN_DECLARE_DISPATCH(binary_fn, fmax_stub);
KILN_DECLARE_DISPATCH(binary_fn, fmin_stub);
/// base ** exponent, both tensors; and a tensor base with a scalar exponent.
KILN_DECLARE_DISPATCH(binary_fn, pow_tensor_tensor_stub);
KILN_DECLARE_DISPATCH(unary_scalar_fn, pow_tensor_scalar_stub);

}  // namespace kiln::native
