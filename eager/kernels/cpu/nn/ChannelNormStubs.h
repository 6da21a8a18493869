// Dispatch stubs of the per-channel loops batch_norm and group_norm share
// (per_capability/ChannelNormKernel.cpp). Tensors are contiguous [n, c, hw] in one
// floating dtype; per-channel numbers are double arrays of c elements. See
// Note [Channel statistics] (BatchNormOps.cpp).
#pragma once

#include <cstdint>

#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

struct ChannelLayout {
  int64_t n = 0;
  int64_t c = 0;
  int64_t hw = 0;
};

/// mean[c] and the biased var[c] of x over n and hw (two passes).
using channel_moments_fn = void (*)(const Tensor& x, ChannelLayout layout, double* mean, double* var);
/// sum_g[c] = sum of g, and (x defined) sum_gx[c] = sum of g * (x - center[c]), over n and hw.
using channel_grad_sums_fn = void (*)(const Tensor& g, const Tensor* x, ChannelLayout layout, const double* center,
                                      double* sum_g, double* sum_gx);
/// out = g * alpha[c] + x * beta[c] + gamma[c] (no g term when g is null).
using channel_affine_fn = void (*)(const Tensor* g, const Tensor& x, ChannelLayout layout, const double* alpha,
                                   const double* beta, const double* gamma, const Tensor& out);

/// group_norm forward on [n, c, hw] with `group` groups, one pass per (sample,
/// group) while its rows are in cache: mean[n * group] and rstd[n * group] of
/// each group, then y = x * (w rstd) + (b - mean w rstd) per channel (w, b: c doubles).
using group_norm_forward_fn = void (*)(const Tensor& x, ChannelLayout layout, int64_t group, const double* weight,
                                       const double* bias, double eps, double* mean, double* rstd, const Tensor& y);
/// group_norm's input gradient on [n, c, hw], per (sample, group) while its
/// rows are in cache: the channel sums of g and g (x - mean), then dx (see
/// Note [Channel statistics]). mean, rstd: n * group doubles; weight: c doubles.
/// sum_g / sum_gd (n * c doubles, or null) receive each (sample, channel)'s sums
/// of g and of g (x - mean), from which the weight and bias gradients follow.
using group_norm_backward_input_fn = void (*)(const Tensor& g, const Tensor& x, ChannelLayout layout, int64_t group,
                                              const double* mean, const double* rstd, const double* weight,
                                              const Tensor& dx, double* sum_g, double* sum_gd);

KILN_DECLARE_DISPATCH(channel_moments_fn, channel_moments_stub);
KILN_DECLARE_DISPATCH(group_norm_forward_fn, group_norm_forward_stub);
KILN_DECLARE_DISPATCH(group_norm_backward_input_fn, group_norm_backward_input_stub);
KILN_DECLARE_DISPATCH(channel_grad_sums_fn, channel_grad_sums_stub);
KILN_DECLARE_DISPATCH(channel_affine_fn, channel_affine_stub);

}  // namespace kiln::native
