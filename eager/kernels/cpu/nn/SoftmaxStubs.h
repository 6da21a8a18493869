// Dispatch stubs of the softmax loops (per_capability/SoftmaxKernel.cpp). Every
// tensor is contiguous and viewed as [outer, dim, inner]; float16/bfloat16
// compute in float. See Note [Softmax computes in float] (SoftmaxOps.cpp).
#pragma once

#include <cstdint>

#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// The [outer, dim, inner] view of a contiguous tensor reduced along one dim.
struct SoftmaxShape {
  int64_t outer = 1;
  int64_t dim = 1;
  int64_t inner = 1;
};

/// out = softmax (or log_softmax when `log`) of `in` along the middle dim; same dtype.
using softmax_fn = void (*)(const Tensor& in, const Tensor& out, SoftmaxShape shape, bool log);
/// grad_input from grad_output and the forward's output (all contiguous):
/// softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g). grad_input
/// may have another dtype than grad/output (the forward's input dtype).
using softmax_backward_fn = void (*)(const Tensor& grad, const Tensor& output, const Tensor& grad_input,
                                     SoftmaxShape shape, bool log);

KILN_DECLARE_DISPATCH(softmax_fn, softmax_stub);
KILN_DECLARE_DISPATCH(softmax_backward_fn, softmax_backward_stub);

}  // namespace kiln::native
