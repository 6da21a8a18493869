// Dispatch stubs of the layer_norm / rms_norm loops (per_capability/NormKernel.cpp).
// Every tensor is contiguous; the input is [M, N] with N the normalized
// elements; mean and rstd hold M values. See Note [Norm statistics] (NormOps.cpp).
#pragma once

#include <cstdint>

#include "eager/kernels/NormShape.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// y = (x - mean) * rstd * weight + bias; mean (undefined for rms_norm: 0) and rstd written.
using norm_forward_fn = void (*)(const Tensor& x, const Tensor* weight, const Tensor* bias, const Tensor& y,
                                 const Tensor* mean, const Tensor& rstd, NormRows shape, double eps);
/// dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)) (no mean(g*w) term for rms_norm).
using norm_backward_input_fn = void (*)(const Tensor& grad, const Tensor& x, const Tensor* mean, const Tensor& rstd,
                                        const Tensor* weight, const Tensor& dx, NormRows shape);
/// dweight = sum over rows of g * xhat (when x is defined), else dbias = sum over rows of g.
using norm_backward_params_fn = void (*)(const Tensor& grad, const Tensor* x, const Tensor* mean, const Tensor* rstd,
                                         const Tensor& out, NormRows shape);

KILN_DECLARE_DISPATCH(norm_forward_fn, norm_forward_stub);
KILN_DECLARE_DISPATCH(norm_backward_input_fn, norm_backward_input_stub);
KILN_DECLARE_DISPATCH(norm_backward_params_fn, norm_backward_params_stub);

}  // namespace kiln::native
