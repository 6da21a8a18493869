// float32 2-d convolution on oneDNN (Debian's libdnnl, OpenMP build): the
// forward, backward-data and backward-weights products of _convolution2d and
// its backward ops. See Note [Convolution on oneDNN] (ConvOneDnn.cpp).
#pragma once

#include "eager/kernels/cpu/nn/ConvShape.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// Each returns false, writing nothing, when oneDNN has no implementation for g.

/// y = conv(x, w) + bias (bias undefined: none). Every tensor is a contiguous
/// float32 NCHW / OIHW buffer of g's sizes; y is written whole.
bool onednn_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                           const Conv2dGeometry& g);
/// gx = the adjoint of the convolution in its input, applied to gy.
bool onednn_conv2d_backward_input(const Tensor& gy, const Tensor& w, const Tensor& gx, const Conv2dGeometry& g);
/// gw = the adjoint in the weight: the sum over the batch of gy correlated with x.
bool onednn_conv2d_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const Conv2dGeometry& g);

}  // namespace kiln::native
