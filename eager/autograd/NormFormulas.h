// Backward formulas of the normalisations whose statistics are outputs too
// (eager/ops/nn.yaml): native_group_norm's gradients from all three of its
// outputs' gradients. See Note [Gradients through group_norm's statistics].
#pragma once

#include <optional>
#include <tuple>

#include "kiln/generated/Functions.h"

namespace kiln::autograd::formula {

// Note [Gradients through group_norm's statistics]
// ------------------------------------------------
// native_group_norm returns (out, mean, rstd), mean and rstd of shape (N, group), over each group's M =
// numel / (N * group) elements x: mean = sum(x) / M, rstd = (var + eps)^(-1/2) with var the biased
// variance. Their gradients reach x as
//   d mean / dx = 1 / M,   d rstd / dx = -rstd^3 (x - mean) / M,
// added to _group_norm_backward's input gradient (weight and bias do not enter the statistics), as
// PyTorch's infinitely_differentiable_native_group_norm_backward. The generated node passes the two
// statistics' gradients undefined when nothing used them (autograd.py READS_UNDEFINED_GRADS), so a plain
// group_norm backward costs what it did. Known difference: torch adds the statistics' part only when both
// mean and rstd have a gradient (and gives input none when only one of them has); kiln adds each one's.

/// (grad_input, grad_weight, grad_bias) of native_group_norm; grad_out, grad_mean, grad_rstd may be undefined.
[[nodiscard]] inline std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(
    const Tensor& grad_out, const Tensor& grad_mean, const Tensor& grad_rstd, const Tensor& input,
    const std::optional<Tensor>& weight, const Tensor& mean, const Tensor& rstd, int64_t group) {
  auto grads = kiln::_group_norm_backward(grad_out.defined() ? grad_out : kiln::zeros_like(input), input, weight,
                                          mean, rstd, group);
  if (!grad_mean.defined() && !grad_rstd.defined()) return grads;
  const Tensor x = kiln::reshape(input, {input.size(0), group, -1});  // (N, group, M)
  const auto m = static_cast<double>(x.size(2));
  Tensor per_element;  // d(statistics) / dx, as (N, group, M) or broadcastable to it
  if (grad_rstd.defined()) {
    const Tensor scale = kiln::unsqueeze(kiln::mul(grad_rstd, kiln::pow(rstd, Scalar(3.0))), -1);
    per_element = kiln::mul(kiln::sub(x, kiln::unsqueeze(mean, -1)), kiln::div(scale, Scalar(-m)));
  }
  if (grad_mean.defined()) {
    const Tensor from_mean = kiln::unsqueeze(kiln::div(grad_mean, Scalar(m)), -1);
    per_element = kiln::add(per_element.defined() ? per_element : kiln::zeros_like(x), from_mean);
  }
  std::get<0>(grads) = kiln::add(std::get<0>(grads), kiln::reshape(per_element, input.sizes()));
  return grads;
}

}  // namespace kiln::autograd::formula
