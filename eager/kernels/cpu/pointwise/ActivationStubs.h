// Dispatch stubs of the activation kernels and their backward ops (defined per
// capability in eager/kernels/cpu/pointwise/per_capability/ActivationKernel.cpp). Every stub
// takes the op's non-tensor arguments as ActivationArgs; each op's comment
// says which field holds what.
#pragma once

#include "eager/core/Scalar.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

/// The non-tensor arguments of an activation, converted to the loop's type by the kernel.
struct ActivationArgs {
  Scalar p0;
  Scalar p1;
  Scalar p2;
  bool flag = false;
};

using activation_fn = void (*)(TensorIterator& iter, const ActivationArgs& args);

// Forward ops (one input):
//   relu; hardtanh (p0 min_val, p1 max_val); gelu (flag: approximate="tanh");
//   silu; mish; softplus (p0 beta, p1 threshold); leaky_relu (p0 negative_slope);
//   elu (p0 alpha, p1 scale, p2 input_scale); hardsigmoid; hardswish;
//   threshold (p0 threshold, p1 value).
// Backward ops (inputs grad_output, then self / output / self_or_result):
//   threshold_backward (p0 threshold); tanh_backward; sigmoid_backward;
//   gelu_backward (flag: tanh); silu_backward; mish_backward;
//   softplus_backward (p0 beta, p1 threshold); leaky_relu_backward (p0 slope);
//   elu_backward (p0 alpha, p1 scale, p2 input_scale, flag: is_result);
//   hardtanh_backward (p0 min_val, p1 max_val); hardsigmoid_backward;
//   hardswish_backward; logit_backward (p0 eps, negative for None).
#define KILN_FORALL_ACTIVATIONS(_) \
  _(relu) _(hardtanh) _(gelu) _(silu) _(mish) _(softplus) _(leaky_relu) _(elu) _(hardsigmoid) _(hardswish) _(threshold)
#define KILN_FORALL_ACTIVATION_BACKWARDS(_)                                                                      \
  _(threshold_backward) _(tanh_backward) _(sigmoid_backward) _(gelu_backward) _(silu_backward) _(mish_backward) \
  _(softplus_backward) _(leaky_relu_backward) _(elu_backward) _(hardtanh_backward) _(hardsigmoid_backward)     \
  _(hardswish_backward) _(logit_backward)

#define KILN_DECLARE_ACTIVATION_STUB_(op) KILN_DECLARE_DISPATCH(activation_fn, op##_stub);
KILN_FORALL_ACTIVATIONS(KILN_DECLARE_ACTIVATION_STUB_)
KILN_FORALL_ACTIVATION_BACKWARDS(KILN_DECLARE_ACTIVATION_STUB_)
#undef KILN_DECLARE_ACTIVATION_STUB_

}  // namespace kiln::native
