// Dispatch stubs of the convolution loops (per_capability/ConvKernel.cpp): im2col,
// col2im, the moves between NCHW and the GEMM's [channels, samples * L]
// layout, and the bias gradient, float32/float64 only (the op widens
// float16/bfloat16 first); a direct int64 convolution for integer dtypes. Every
// tensor buffer is contiguous NCHW. See
// Note [Convolution as im2col and GEMM] (ConvIm2col.cpp).
#pragma once

#include <cstdint>

#include "eager/core/DType.h"
#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/kernels/cpu/nn/ConvShape.h"

namespace kiln::native {

/// A chunk of `count` samples starting at `first`, for one group.
struct ConvChunk {
  int64_t first = 0;
  int64_t count = 0;
  int64_t group = 0;
};

/// col[(c * KH + kh) * KW + kw][n * L + l] = input[first + n, group's channel c,
/// oh * sh - ph + kh * dh, ow * sw - pw + kw * dw] (0 outside the input), where
/// l = oh * out_w + ow, L = out_h * out_w; col has count * L columns.
using im2col_fn = void (*)(DType dtype, const void* input, void* col, const Conv2dGeometry& g, ConvChunk chunk);
/// The adjoint of im2col: writes (not accumulates) every plane of the chunk's
/// group channels of grad_input with the sum of the col entries that read it.
using col2im_fn = void (*)(DType dtype, const void* col, void* grad_input, const Conv2dGeometry& g, ConvChunk chunk);
/// out[first + n, group's channel o, l] = rows[o][n * L + l] + bias[that channel]
/// (bias may be nullptr) for the chunk's samples; rows is [out_channels / groups, count * L].
using conv_scatter_fn = void (*)(DType dtype, const void* rows, const void* bias, void* out,
                                 const Conv2dGeometry& g, ConvChunk chunk);
/// The inverse move: rows[o][n * L + l] = grad_out[first + n, group's channel o, l].
using conv_gather_fn = void (*)(DType dtype, const void* grad_out, void* rows, const Conv2dGeometry& g,
                                ConvChunk chunk);
/// grad_bias[c] = sum over n and l of grad_out[n, c, l] for grad_out [batch, channels, plane].
using conv_bias_grad_fn = void (*)(DType dtype, const void* grad_out, void* grad_bias, int64_t batch,
                                   int64_t channels, int64_t plane);

/// The direct convolution of integer tensors, computed in int64 with wrapping
/// (modular) arithmetic, so narrowing the result gives the input dtype's own
/// wrapped sums: out[n, o, oh, ow] = bias[o] (bias may be nullptr) + the sum over
/// the group's channels and taps of input * weight.
using conv_direct_int64_fn = void (*)(const int64_t* input, const int64_t* weight, const int64_t* bias,
                                      int64_t* out, const Conv2dGeometry& g);

KILN_DECLARE_DISPATCH(im2col_fn, im2col_stub);
KILN_DECLARE_DISPATCH(conv_direct_int64_fn, conv_direct_int64_stub);
KILN_DECLARE_DISPATCH(col2im_fn, col2im_stub);
KILN_DECLARE_DISPATCH(conv_scatter_fn, conv_scatter_stub);
KILN_DECLARE_DISPATCH(conv_gather_fn, conv_gather_stub);
KILN_DECLARE_DISPATCH(conv_bias_grad_fn, conv_bias_grad_stub);

}  // namespace kiln::native
