// The complex cases of real ops' entry points (abs, sgn). See Note [Complex dtypes] (eager/core/DType.h).
#pragma once

#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// A unary floating op (exp, log, sqrt, sin, tanh, sigmoid, ...) of a complex tensor, elementwise on
/// std::complex; NotImplementedError for an op without a complex form.
[[nodiscard]] Tensor complex_unary_into(const char* op, ResultInto into, const Tensor& out, const Tensor& self);
/// |z| elementwise, in the real dtype of `self` (in place: PyTorch's error).
[[nodiscard]] Tensor complex_abs_into(ResultInto into, const Tensor& out, const Tensor& self);
/// z / |z| elementwise, 0 where z is 0.
[[nodiscard]] Tensor complex_sgn_into(ResultInto into, const Tensor& out, const Tensor& self);

}  // namespace kiln::native
