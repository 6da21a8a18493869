// layer_norm and rms_norm (forward and backward): shape checks and the
// [M, N] view, compiled once; the loops are in per_capability/NormKernel.cpp.
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/NormStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(norm_forward_fn, norm_forward_stub);
KILN_DEFINE_DISPATCH(norm_backward_input_fn, norm_backward_input_stub);
KILN_DEFINE_DISPATCH(norm_backward_params_fn, norm_backward_params_stub);

// Note [Norm statistics]
// ----------------------
// layer_norm normalises each row of N = prod(normalized_shape) elements:
// mean and the biased variance come from two passes over the row in float
// (double for float64; float16/bfloat16 widened), which is as accurate as
// Welford's update for a row that fits in cache and vectorises better;
// rstd = 1 / sqrt(var + eps). rms_norm is the same with the mean fixed at 0
// (rstd = 1 / sqrt(mean(x^2) + eps), eps None meaning the epsilon of the
// compute type, as torch). mean and rstd have the input's leading dims followed by ones, as
// PyTorch's native_layer_norm returns them, in the input dtype. The backward
// ops recompute xhat = (x - mean) * rstd from the saved statistics.

namespace {


/// input's leading dims followed by ones: the shape of mean and rstd.
DimVector stats_shape(const Tensor& input, int64_t k) {
  DimVector shape(input.sizes());
  for (int64_t d = input.dim() - k; d < input.dim(); ++d) shape[static_cast<size_t>(d)] = 1;
  return shape;
}

Tensor same_dtype_contiguous(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? contiguous_values(t) : to_dtype_copy(t, dtype);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cpu(const Tensor& input, IntArrayRef normalized_shape,
                                                          const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, double eps) {
  const NormRows s = check_norm_arguments(input, normalized_shape, weight, bias);
  const Tensor x = contiguous_values(input);
  Tensor y = empty(input.sizes(), input.dtype(), input.device());
  const DimVector st = stats_shape(input, static_cast<int64_t>(normalized_shape.size()));
  Tensor mean = empty(st, input.dtype(), input.device());
  Tensor rstd = empty(st, input.dtype(), input.device());
  const Tensor w = weight && weight->defined() ? same_dtype_contiguous(*weight, input.dtype()) : Tensor();
  const Tensor b = bias && bias->defined() ? same_dtype_contiguous(*bias, input.dtype()) : Tensor();
  if (s.rows > 0) {
    norm_forward_stub(x, w.defined() ? &w : nullptr, b.defined() ? &b : nullptr, y, &mean, rstd, s, eps);
  }
  return {y, mean, rstd};
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool /*cudnn_enable*/) {
  return std::get<0>(kiln::native_layer_norm(input, normalized_shape, weight, bias, eps));
}

std::tuple<Tensor, Tensor> fused_rms_norm_cpu(const Tensor& input, IntArrayRef normalized_shape,
                                              const std::optional<Tensor>& weight, std::optional<double> eps) {
  const NormRows s = check_norm_arguments(input, normalized_shape, weight, std::nullopt);
  // eps None: the epsilon of the type the loop computes in (float for float16/bfloat16), as torch.
  const double e = eps ? *eps : input.dtype() == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                                : double(std::numeric_limits<float>::epsilon());
  const Tensor x = contiguous_values(input);
  Tensor y = empty(input.sizes(), input.dtype(), input.device());
  Tensor rstd = empty(stats_shape(input, static_cast<int64_t>(normalized_shape.size())), input.dtype(), input.device());
  const Tensor w = weight && weight->defined() ? same_dtype_contiguous(*weight, input.dtype()) : Tensor();
  if (s.rows > 0) norm_forward_stub(x, w.defined() ? &w : nullptr, nullptr, y, nullptr, rstd, s, e);
  return {y, rstd};
}

Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                std::optional<double> eps) {
  return std::get<0>(kiln::_fused_rms_norm(input, normalized_shape, weight, eps));
}

Tensor norm_backward_input_cpu(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                               const std::optional<Tensor>& mean, const Tensor& rstd,
                               const std::optional<Tensor>& weight) {
  const NormRows s = check_norm_arguments(input, normalized_shape, weight, std::nullopt);
  const DType dt = input.dtype();
  const Tensor g = same_dtype_contiguous(grad_out, dt);
  const Tensor x = contiguous_values(input);
  const Tensor m = mean && mean->defined() ? same_dtype_contiguous(*mean, dt) : Tensor();
  const Tensor r = same_dtype_contiguous(rstd, dt);
  const Tensor w = weight && weight->defined() ? same_dtype_contiguous(*weight, dt) : Tensor();
  Tensor dx = empty(input.sizes(), dt, input.device());
  if (s.rows > 0 && s.cols > 0) {
    norm_backward_input_stub(g, x, m.defined() ? &m : nullptr, r, w.defined() ? &w : nullptr, dx, s);
  }
  return dx;
}

Tensor norm_backward_weight_cpu(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                                const std::optional<Tensor>& mean, const Tensor& rstd) {
  const NormRows s = check_norm_arguments(input, normalized_shape, std::nullopt, std::nullopt);
  const DType dt = input.dtype();
  const Tensor g = same_dtype_contiguous(grad_out, dt);
  const Tensor x = contiguous_values(input);
  const Tensor m = mean && mean->defined() ? same_dtype_contiguous(*mean, dt) : Tensor();
  const Tensor r = same_dtype_contiguous(rstd, dt);
  Tensor dw = zeros(normalized_shape, dt, input.device());
  if (s.rows > 0 && s.cols > 0) norm_backward_params_stub(g, &x, m.defined() ? &m : nullptr, &r, dw, s);
  return dw;
}

Tensor norm_backward_bias_cpu(const Tensor& grad_out, IntArrayRef normalized_shape) {
  const Tensor g = contiguous_values(grad_out);
  NormRows s;
  s.cols = 1;
  for (int64_t v : normalized_shape) s.cols *= v;
  s.rows = s.cols == 0 ? 0 : g.numel() / s.cols;
  Tensor db = zeros(normalized_shape, g.dtype(), g.device());
  if (s.rows > 0 && s.cols > 0) norm_backward_params_stub(g, nullptr, nullptr, nullptr, db, s);
  return db;
}

}  // namespace kiln::native
