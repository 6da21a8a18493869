// Shared set-up of the unary pointwise ops and activations (UnaryOps.cpp,
// UnaryOpsSpecial.cpp, Activation*.cpp): the two ways a unary op builds its
// TensorIterator. See Note [Three ways to write a result] (ResultInto.h).
#pragma once

#include "eager/core/Tensor.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/BinaryOps.h"

namespace kiln::native {

/// PyTorch's build_borrowing_unary_float_op: integer and bool inputs compute in
/// the default float dtype; the result is cast into out=/in-place tensors when
/// that is a safe cast ("result type Float can't be cast to the desired output
/// type Long" otherwise).
[[nodiscard]] TensorIterator unary_float_iterator(const char* name, ResultInto into, const Tensor& out,
                                                  const Tensor& self);

/// PyTorch's build_borrowing_unary_op: the loop computes in self's dtype and an
/// out= tensor must have it ("Found dtype Double but expected Float"). The
/// caller runs check_inplace first where PyTorch does (its order of checks varies by op).
[[nodiscard]] TensorIterator unary_same_dtype_iterator(const char* name, ResultInto into, const Tensor& out,
                                                       const Tensor& self);

/// A unary op with a bool result (isnan, signbit, ...): the loop reads self's
/// dtype; out= must be bool ("isposinf does not support non-boolean outputs.").
[[nodiscard]] TensorIterator unary_predicate_iterator(const char* name, ResultInto into, const Tensor& out,
                                                      const Tensor& self);

}  // namespace kiln::native
