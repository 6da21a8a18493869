// The helper functions derivative formulas in ops.yaml may call besides ops
// (the list is tools/opgen/derivatives.py HELPERS). Generated backward nodes
// (AutogradKernels.cpp) call these with the names the formulas use.
#pragma once

#include <optional>
#include <string_view>

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

// --- activations' second derivatives (eager/ops/activation.yaml) --------------------------
// Written with kiln ops, so they are differentiable in turn. `grad` is the
// gradient flowing into the backward op's result.

/// d/dself of gelu_backward(grad_output, self, approximate), times grad.
[[nodiscard]] inline Tensor gelu_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self,
                                                 std::string_view approximate) {
  const Tensor gg = kiln::mul(grad, grad_output);
  const Tensor x_sq = kiln::mul(self, self);
  if (approximate == "tanh") {
    constexpr double kBeta = 0.79788456080286535588;  // sqrt(2 / pi)
    constexpr double kKappa = 0.044715;
    const Tensor inner = kiln::mul(kiln::add(self, kiln::mul(kiln::mul(x_sq, self), kKappa)), kBeta);
    const Tensor t = kiln::tanh(inner);
    const Tensor one_minus_t_sq = kiln::rsub(kiln::mul(t, t), 1);
    const Tensor du = kiln::mul(kiln::add(kiln::mul(x_sq, 3 * kKappa), 1), kBeta);  // u'
    const Tensor d2u = kiln::mul(self, 6 * kBeta * kKappa);                          // u''
    // gelu'' = (1 - t^2) (u' + x/2 (u'' - 2 t u'^2))
    const Tensor bracket = kiln::sub(d2u, kiln::mul(kiln::mul(t, kiln::mul(du, du)), 2));
    return kiln::mul(gg, kiln::mul(one_minus_t_sq, kiln::add(du, kiln::mul(kiln::mul(self, 0.5), bracket))));
  }
  constexpr double kPdfScale = 0.39894228040143267794;  // 1 / sqrt(2 pi)
  const Tensor pdf = kiln::mul(kiln::exp(kiln::mul(x_sq, -0.5)), kPdfScale);
  return kiln::mul(gg, kiln::mul(pdf, kiln::rsub(x_sq, 2)));  // gelu'' = pdf (2 - x^2)
}

/// d/dself of mish_backward(grad_output, self), times grad:
/// mish'' = (1 - t^2) s (2 + x (1 - s) - 2 x s t), s = sigmoid(x), t = tanh(softplus(x)).
[[nodiscard]] inline Tensor mish_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self) {
  const Tensor s = kiln::sigmoid(self);
  const Tensor t = kiln::tanh(kiln::softplus(self));
  const Tensor one_minus_t_sq = kiln::rsub(kiln::mul(t, t), 1);
  const Tensor bracket = kiln::sub(kiln::add(kiln::mul(self, kiln::rsub(s, 1)), 2),
                                   kiln::mul(kiln::mul(kiln::mul(self, s), t), 2));
  return kiln::mul(kiln::mul(grad, grad_output), kiln::mul(kiln::mul(one_minus_t_sq, s), bracket));
}

/// d/dself of softplus_backward, times `grad` (grad * grad_output):
/// beta sigmoid(beta x) (1 - sigmoid(beta x)) below the threshold, 0 above it.
[[nodiscard]] inline Tensor softplus_double_backward(const Tensor& grad, const Tensor& self, const Scalar& beta,
                                                     const Scalar& threshold) {
  const Tensor bx = kiln::mul(self, beta);
  const Tensor s = kiln::sigmoid(bx);
  const Tensor d2 = kiln::mul(kiln::mul(s, kiln::rsub(s, 1)), beta);
  return kiln::where(kiln::le(bx, threshold), kiln::mul(grad, d2), 0);
}

/// d/dself_or_result of elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result), times grad.
[[nodiscard]] inline Tensor elu_double_backward(const Tensor& grad, const Tensor& grad_output, const Scalar& alpha,
                                                const Scalar& scale, const Scalar& input_scale, bool is_result,
                                                const Tensor& self_or_result) {
  const double negcoef = alpha.to_double() * scale.to_double();
  const double negiptcoef = input_scale.to_double();
  const Tensor gg = kiln::mul(grad, grad_output);
  const Tensor negative = kiln::le(self_or_result, 0);
  if (is_result) return kiln::where(negative, kiln::mul(gg, negiptcoef), 0);
  const Tensor d2 = kiln::mul(kiln::exp(kiln::mul(self_or_result, negiptcoef)), negiptcoef * negiptcoef * negcoef);
  return kiln::where(negative, kiln::mul(gg, d2), 0);
}

/// d/dself of logit_backward(grad_output, self, eps), times grad: (2x - 1) / (x (1 - x))^2,
/// 0 outside [eps, 1 - eps] when eps is given.
[[nodiscard]] inline Tensor logit_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self,
                                                  std::optional<double> eps) {
  const Tensor q = kiln::mul(self, kiln::rsub(self, 1));
  const Tensor d2 = kiln::div(kiln::sub(kiln::mul(self, 2), 1), kiln::mul(q, q));
  const Tensor result = kiln::mul(kiln::mul(grad, grad_output), d2);
  if (!eps.has_value() || *eps < 0) return result;
  const Tensor inside = kiln::logical_and(kiln::ge(self, *eps), kiln::le(self, 1.0 - *eps));
  return kiln::where(inside, result, 0);
}

}  // namespace kiln::autograd::formula
