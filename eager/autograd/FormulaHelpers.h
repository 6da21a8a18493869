// The helper functions derivative formulas in ops.yaml may call besides ops
// (the list is tools/opgen/derivatives.py HELPERS). Generated backward nodes
// (AutogradKernels.cpp) call these with the names the formulas use.
#pragma once

#include <optional>

#include "eager/autograd/Variable.h"
#include "eager/core/Scalar.h"
#include "kiln/generated/Functions.h"

namespace kiln::autograd::formula {

/// grad * alpha, skipped when alpha is 1.
[[nodiscard]] inline Tensor maybe_multiply(const Tensor& grad, const Scalar& alpha) {
  if ((alpha.is_integral() && alpha.to_int64() == 1) || (alpha.is_floating_point() && alpha.to_double() == 1.0)) {
    return grad;
  }
  // alpha * grad as 0 + alpha * grad: add's alpha path, the one multiply-by-scalar every build has.
  return kiln::add(kiln::zeros(grad.sizes(), grad.dtype(), grad.device()), grad, alpha);
}

[[nodiscard]] inline Tensor zeros_like(const Tensor& t) { return kiln::zeros(t.sizes(), t.dtype(), t.device()); }

[[nodiscard]] inline Tensor to(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : autograd::to_dtype(t, dtype);
}

[[nodiscard]] inline Tensor reshape(const Tensor& t, IntArrayRef shape) {
  return (t.is_contiguous() ? t : autograd::detached_copy(t)).view(shape);
}

[[nodiscard]] inline Tensor sum_to(const Tensor& grad, IntArrayRef shape) {
  return autograd::sum_to(grad, shape, "sum_to");
}

}  // namespace kiln::autograd::formula
