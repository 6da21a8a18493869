// Dispatch stubs of the pooling loops (per_capability/PoolKernel.cpp). Every tensor
// is contiguous and viewed as `planes` planes of [height, width]; floating
// dtypes (max_pool2d's forward: integers too), float16/bfloat16 computed in
// float. See Note [Pooling windows]
// (Pool.cpp).
#pragma once

#include <cstdint>

#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// One 2-d pooling over `planes` input planes [in_h, in_w] into [out_h, out_w].
struct PoolGeometry {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  bool count_include_pad = true;  // avg_pool2d
  int64_t divisor = 0;            // avg_pool2d's divisor_override, 0 for none
};

/// out = the window maxima, indices = their flat positions h * in_w + w (NaN
/// wins; an undefined `indices` is not written); floating and integer dtypes.
using max_pool2d_fn = void (*)(const Tensor& in, const Tensor& out, const Tensor& indices, const PoolGeometry& g);
/// grad_in = grad_out scattered to `indices` (summed); false when an index is
/// outside its plane (nothing is written there).
using max_pool2d_backward_fn = bool (*)(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_in,
                                        const PoolGeometry& g);
/// avg_pool2d (kernel, stride, padding) or, with `adaptive`, adaptive_avg_pool2d
/// (windows from the sizes); floating dtypes and int64 (truncating division).
using avg_pool2d_fn = void (*)(const Tensor& in, const Tensor& out, const PoolGeometry& g, bool adaptive);
/// The adjoint of avg_pool2d_fn: each grad_out value shared evenly over its window.
using avg_pool2d_backward_fn = void (*)(const Tensor& grad_out, const Tensor& grad_in, const PoolGeometry& g,
                                        bool adaptive);

KILN_DECLARE_DISPATCH(max_pool2d_fn, max_pool2d_stub);
KILN_DECLARE_DISPATCH(max_pool2d_backward_fn, max_pool2d_backward_stub);
KILN_DECLARE_DISPATCH(avg_pool2d_fn, avg_pool2d_stub);
KILN_DECLARE_DISPATCH(avg_pool2d_backward_fn, avg_pool2d_backward_stub);

}  // namespace kiln::native
