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

/// Gradient of select(dim, index): zeros of the input's shape with grad at index.
[[nodiscard]] inline Tensor select_backward(const Tensor& grad, IntArrayRef input_sizes, int64_t dim, int64_t index) {
  Tensor out = kiln::zeros(input_sizes, grad.dtype(), grad.device());
  (void)out.select(dim, index).copy_(grad);
  return out;
}

/// Gradient of slice(dim, start, end, step): zeros of the input's shape with grad in the slice.
[[nodiscard]] inline Tensor slice_backward(const Tensor& grad, IntArrayRef input_sizes, int64_t dim,
                                           std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  Tensor out = kiln::zeros(input_sizes, grad.dtype(), grad.device());
  (void)kiln::slice(out, dim, start, end, step).copy_(grad);
  return out;
}

/// Gradient of permute(dims): grad permuted by the inverse permutation.
[[nodiscard]] inline Tensor permute_backwards(const Tensor& grad, IntArrayRef dims) {
  DimVector inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i] < 0 ? dims[i] + static_cast<int64_t>(dims.size()) : dims[i];
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(i);
  }
  return grad.permute(inverse);
}

/// Every element of an int list negated.
[[nodiscard]] inline DimVector negated(IntArrayRef values) {
  DimVector out(values);
  for (auto& v : out) v = -v;
  return out;
}

}  // namespace kiln::autograd::formula
