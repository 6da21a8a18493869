// batch_norm and group_norm (forward and backward): argument checks, the
// [N, C, HxW] layout and the per-channel coefficients, compiled once; the loops
// are in per_capability/ChannelNormKernel.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/ChannelNormStubs.h"
#include "eager/kernels/cpu/nn/VisitFloating.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(channel_moments_fn, channel_moments_stub);
KILN_DEFINE_DISPATCH(channel_grad_sums_fn, channel_grad_sums_stub);
KILN_DEFINE_DISPATCH(channel_affine_fn, channel_affine_stub);
KILN_DEFINE_DISPATCH(group_norm_forward_fn, group_norm_forward_stub);
KILN_DEFINE_DISPATCH(group_norm_backward_input_fn, group_norm_backward_input_stub);

// Note [Channel statistics]
// -------------------------
// Both norms read the input as contiguous [N, C, HxW] and reduce runs of HxW
// elements: batch_norm per channel over N and HxW (layout [N, C, HxW]),
// group_norm per (sample, group) over C/group channels and HxW, which is the
// same loop on the layout [1, N*group, C/group*HxW]. Statistics are two-pass
// (mean, then the biased variance of x - mean), each run summed on Vec in the
// compute type and the runs added in double; invstd = 1 / sqrt(var + eps).
// Everything the kernels apply is an affine map per channel,
//   out = grad * alpha[c] + x * beta[c] + gamma[c],
// with the coefficients computed here in double:
//   forward   y  = x * (w invstd) + (b - mean w invstd)
//   backward  dx = w invstd (g - sum(g)/M - xhat sum(g xhat)/M), xhat = (x - mean) invstd,
// M the elements per statistic; in eval mode (running statistics given,
// training False) dx = g w invstd. group_norm's forward and input gradient
// run one task per (sample, group) whose C/group*HxW contiguous elements stay
// in cache from the statistics (or gradient sums) to the output, so the input
// is read from memory once (as PyTorch's kernel; the separate statistics and
// affine passes made group_norm 1.13x torch's forward). batch_norm's running statistics
// are updated in training mode as PyTorch does, with the unbiased variance:
//   running = (1 - momentum) running + momentum stat
// written through their data pointer (no version bump, as PyTorch's kernel).

namespace {

ChannelLayout layout_of(const Tensor& t) {
  ChannelLayout l;
  l.n = t.size(0);
  l.c = t.size(1);
  l.hw = 1;
  for (int64_t d = 2; d < t.dim(); ++d) l.hw *= t.size(d);
  return l;
}

Tensor same_dtype_contiguous(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? contiguous_values(t) : to_dtype_copy(t, dtype);
}

bool defined(const std::optional<Tensor>& t) { return t && t->defined(); }

/// The values of a 1-D parameter or statistic as doubles; `fill` repeated when absent.
std::vector<double> doubles(const std::optional<Tensor>& t, int64_t c, double fill) {
  if (!defined(t)) return std::vector<double>(static_cast<size_t>(c), fill);
  const Tensor d = to_dtype_copy(*t, DType::Float64);
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

/// A tensor of `sizes` in `dtype` holding `v`.
Tensor from_doubles(const std::vector<double>& v, IntArrayRef sizes, DType dtype) {
  Tensor d = empty(sizes, DType::Float64);
  double* p = d.data_ptr<double>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return dtype == DType::Float64 ? d : to_dtype_copy(d, dtype);
}

/// Writes `v` into a running statistic. See Note [Channel statistics].
void write_running(const Tensor& t, const std::vector<double>& v) {
  if (!t.is_contiguous()) {
    kiln::copy_(t, from_doubles(v, t.sizes(), DType::Float64));
    return;
  }
  visit_floating_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data_ptr<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = convert_element<T>(v[i]);
  });
}

/// The dtype of a weight or bias gradient: float32 for float16/bfloat16 inputs (a
/// float32 parameter loses nothing; the engine casts to the parameter's dtype).
DType param_grad_dtype(DType input) {
  return input == DType::Float16 || input == DType::BFloat16 ? DType::Float32 : input;
}

/// The backward ops read grad_out as the input's [N, C, HxW] and the saved
/// statistics by index: both must have the sizes the forward gave them.
void check_backward_inputs(const char* op, const Tensor& grad_out, const Tensor& input) {
  KILN_CHECK(std::ranges::equal(grad_out.sizes(), input.sizes()), op, ": expected grad_out of the input's size ", input.sizes(),
             ", but got ", grad_out.sizes());
}

void check_saved(const char* op, const char* name, const Tensor& saved, int64_t count) {
  KILN_CHECK(saved.defined() && saved.numel() == count, op, ": expected ", name, " with ", count,
             " elements, but got ", saved.defined() ? saved.numel() : 0);
}

void check_channel_vector(const std::optional<Tensor>& t, const char* name, int64_t c) {
  KILN_CHECK(!defined(t) || t->numel() == c, name, " should contain ", c, " elements not ",
             defined(t) ? t->numel() : 0);
}

void check_batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                      const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var) {
  KILN_CHECK(input.dim() >= 2, "batch_norm: expected an input of at least 2 dimensions [N, C, *], but got input of "
             "size ", input.sizes());
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(input.dtype()), "\"batch_norm\" not implemented for '",
                             scalar_type_name(input.dtype()), "'");
  const int64_t c = input.size(1);
  check_channel_vector(running_mean, "running_mean", c);
  check_channel_vector(running_var, "running_var", c);
  check_channel_vector(weight, "weight", c);
  check_channel_vector(bias, "bias", c);
}

/// The statistics the forward normalised with: the batch's when training (or,
/// for a backward op called directly, without running statistics), else the
/// running ones.
bool uses_batch_stats(bool training, const std::optional<Tensor>& running_mean,
                      const std::optional<Tensor>& running_var) {
  return training || !defined(running_mean) || !defined(running_var);
}

/// (mean, invstd) per channel as the forward used them.
std::pair<std::vector<double>, std::vector<double>> used_stats(
    int64_t c, const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const Tensor& save_mean, const Tensor& save_invstd, bool batch, double eps) {
  if (batch) return {doubles(save_mean, c, 0), doubles(save_invstd, c, 1)};
  std::vector<double> invstd = doubles(running_var, c, 1);
  for (double& v : invstd) v = 1.0 / std::sqrt(v + eps);
  return {doubles(running_mean, c, 0), invstd};
}

}  // namespace

// --- batch_norm ---------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_cpu(const Tensor& input, const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias,
                                                          const std::optional<Tensor>& running_mean,
                                                          const std::optional<Tensor>& running_var, bool training,
                                                          double momentum, double eps) {
  check_batch_norm(input, weight, bias, running_mean, running_var);
  KILN_CHECK(training || defined(running_mean), "running_mean must be defined in evaluation mode");
  KILN_CHECK(training || defined(running_var), "running_var must be defined in evaluation mode");
  const ChannelLayout l = layout_of(input);
  const DType dt = input.dtype();
  const bool batch = uses_batch_stats(training, running_mean, running_var);
  if (input.impl()->is_meta()) {  // the checks above are the meta function (Note [Meta kernels], tools/opgen)
    const Device d = input.device();
    const int64_t stats = batch ? l.c : 0;
    return {empty(input.sizes(), dt, d), empty({stats}, dt, d), empty({stats}, dt, d)};
  }
  const Tensor x = contiguous_values(input);
  Tensor y = empty(input.sizes(), dt);
  const auto cs = static_cast<size_t>(l.c);
  std::vector<double> mean(cs, 0.0), invstd(cs, 1.0);
  const int64_t count = l.n * l.hw;
  if (batch) {
    std::vector<double> var(cs, std::numeric_limits<double>::quiet_NaN());
    std::fill(mean.begin(), mean.end(), std::numeric_limits<double>::quiet_NaN());
    if (count > 0) channel_moments_stub(x, l, mean.data(), var.data());
    for (size_t c = 0; c < cs; ++c) invstd[c] = 1.0 / std::sqrt(var[c] + eps);
    if (training && defined(running_mean) && defined(running_var) && count > 0) {
      std::vector<double> rm = doubles(running_mean, l.c, 0), rv = doubles(running_var, l.c, 1);
      const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
      for (size_t c = 0; c < cs; ++c) {
        rm[c] = (1 - momentum) * rm[c] + momentum * mean[c];
        rv[c] = (1 - momentum) * rv[c] + momentum * var[c] * unbias;
      }
      write_running(*running_mean, rm);
      write_running(*running_var, rv);
    }
  } else {
    std::tie(mean, invstd) = used_stats(l.c, running_mean, running_var, Tensor(), Tensor(), false, eps);
  }
  const std::vector<double> w = doubles(weight, l.c, 1), b = doubles(bias, l.c, 0);
  std::vector<double> scale(cs), shift(cs);
  for (size_t c = 0; c < cs; ++c) {
    scale[c] = w[c] * invstd[c];
    shift[c] = b[c] - mean[c] * scale[c];
  }
  if (input.numel() > 0) channel_affine_stub(nullptr, x, l, nullptr, scale.data(), shift.data(), y);
  if (!batch) return {y, empty({0}, dt), empty({0}, dt)};
  return {y, from_doubles(mean, {l.c}, dt), from_doubles(invstd, {l.c}, dt)};
}

Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum, double eps, bool /*cudnn_enabled*/) {
  return std::get<0>(
      kiln::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps));
}

Tensor batch_norm_backward_input_cpu(const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& running_mean,
                                     const std::optional<Tensor>& running_var, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool training, double eps) {
  check_batch_norm(input, weight, std::nullopt, running_mean, running_var);
  check_backward_inputs("_batch_norm_backward_input", grad_out, input);
  const ChannelLayout l = layout_of(input);
  const DType dt = input.dtype();
  // Meta: the checks above are the meta function (Note [Meta kernels], tools/opgen/README.md).
  if (input.impl()->is_meta()) return empty(input.sizes(), dt, input.device());
  const Tensor x = contiguous_values(input);
  const Tensor g = same_dtype_contiguous(grad_out, dt);
  Tensor dx = empty(input.sizes(), dt);
  if (input.numel() == 0) return dx;
  const bool batch = uses_batch_stats(training, running_mean, running_var);
  if (batch) {
    check_saved("_batch_norm_backward_input", "save_mean", save_mean, l.c);
    check_saved("_batch_norm_backward_input", "save_invstd", save_invstd, l.c);
  }
  const auto [mean, invstd] = used_stats(l.c, running_mean, running_var, save_mean, save_invstd, batch, eps);
  const std::vector<double> w = doubles(weight, l.c, 1);
  const auto cs = static_cast<size_t>(l.c);
  std::vector<double> alpha(cs), beta(cs, 0.0), gamma(cs, 0.0);
  for (size_t c = 0; c < cs; ++c) alpha[c] = w[c] * invstd[c];
  if (batch) {
    std::vector<double> sum_g(cs), sum_gx(cs);
    channel_grad_sums_stub(g, &x, l, mean.data(), sum_g.data(), sum_gx.data());
    const double m = static_cast<double>(l.n * l.hw);
    for (size_t c = 0; c < cs; ++c) {
      beta[c] = -alpha[c] * invstd[c] * invstd[c] * sum_gx[c] / m;
      gamma[c] = -alpha[c] * sum_g[c] / m - beta[c] * mean[c];
    }
  }
  channel_affine_stub(&g, x, l, alpha.data(), beta.data(), gamma.data(), dx);
  return dx;
}

Tensor batch_norm_backward_weight_cpu(const Tensor& grad_out, const Tensor& input,
                                      const std::optional<Tensor>& running_mean,
                                      const std::optional<Tensor>& running_var, const Tensor& save_mean,
                                      const Tensor& save_invstd, bool training, double eps) {
  check_batch_norm(input, std::nullopt, std::nullopt, running_mean, running_var);
  check_backward_inputs("_batch_norm_backward_weight", grad_out, input);
  const ChannelLayout l = layout_of(input);
  const DType dt = input.dtype();
  const auto cs = static_cast<size_t>(l.c);
  if (input.impl()->is_meta()) return empty({l.c}, param_grad_dtype(dt), input.device());
  std::vector<double> dw(cs, 0.0);
  if (input.numel() > 0) {
    const Tensor x = contiguous_values(input);
    const Tensor g = same_dtype_contiguous(grad_out, dt);
    const bool batch = uses_batch_stats(training, running_mean, running_var);
    if (batch) {
      check_saved("_batch_norm_backward_weight", "save_mean", save_mean, l.c);
      check_saved("_batch_norm_backward_weight", "save_invstd", save_invstd, l.c);
    }
    const auto [mean, invstd] = used_stats(l.c, running_mean, running_var, save_mean, save_invstd, batch, eps);
    std::vector<double> sum_g(cs);
    channel_grad_sums_stub(g, &x, l, mean.data(), sum_g.data(), dw.data());
    for (size_t c = 0; c < cs; ++c) dw[c] *= invstd[c];
  }
  return from_doubles(dw, {l.c}, param_grad_dtype(dt));
}

Tensor channel_grad_sum_cpu(const Tensor& grad_out) {
  KILN_CHECK(grad_out.dim() >= 2, "_channel_grad_sum: expected a gradient of at least 2 dimensions [N, C, *], but "
             "got size ", grad_out.sizes());
  const ChannelLayout l = layout_of(grad_out);
  if (grad_out.impl()->is_meta()) return empty({l.c}, param_grad_dtype(grad_out.dtype()), grad_out.device());
  std::vector<double> s(static_cast<size_t>(l.c), 0.0);
  if (grad_out.numel() > 0) {
    const Tensor g = contiguous_values(grad_out);
    channel_grad_sums_stub(g, nullptr, l, nullptr, s.data(), nullptr);
  }
  return from_doubles(s, {l.c}, param_grad_dtype(grad_out.dtype()));
}

// --- group_norm ---------------------------------------------------------------------

namespace {

void check_group_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                      int64_t n, int64_t c, int64_t hxw, int64_t group) {
  KILN_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  KILN_CHECK(group > 0 && c % group == 0, "Expected number of channels in input to be divisible by num_groups, but "
             "got input of shape ", input.sizes(), " and num_groups=", group);
  KILN_CHECK(input.numel() == n * c * hxw && input.size(0) == n && input.size(1) == c,
             "native_group_norm: N, C and HxW (", n, ", ", c, ", ", hxw, ") do not match the input of shape ",
             input.sizes());
  KILN_CHECK(!defined(weight) || (weight->dim() == 1 && weight->numel() == c), "Expected weight to be a vector of "
             "size equal to the number of channels in input, but got weight of shape ",
             defined(weight) ? weight->sizes() : IntArrayRef{}, " and input of shape ", input.sizes());
  KILN_CHECK(!defined(bias) || (bias->dim() == 1 && bias->numel() == c), "Expected bias to be a vector of size "
             "equal to the number of channels in input, but got bias of shape ",
             defined(bias) ? bias->sizes() : IntArrayRef{}, " and input of shape ", input.sizes());
  KILN_CHECK_NOT_IMPLEMENTED(is_floating_point(input.dtype()), "\"group_norm\" not implemented for '",
                             scalar_type_name(input.dtype()), "'");
}

/// The sums over each (sample, channel) run: sum of g and of g * (x - mean of its group).
void group_grad_sums(const Tensor& g, const Tensor& x, const ChannelLayout& l, int64_t group,
                     const std::vector<double>& mean, std::vector<double>& s1, std::vector<double>& s2) {
  const int64_t cg = l.c / group;
  std::vector<double> center(static_cast<size_t>(l.n * l.c));
  for (int64_t i = 0; i < l.n * l.c; ++i) {
    center[static_cast<size_t>(i)] = mean[static_cast<size_t>((i / l.c) * group + (i % l.c) / cg)];
  }
  s1.assign(center.size(), 0.0);
  s2.assign(center.size(), 0.0);
  const ChannelLayout runs{1, l.n * l.c, l.hw};
  channel_grad_sums_stub(g, &x, runs, center.data(), s1.data(), s2.data());
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_group_norm_cpu(const Tensor& input, const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, int64_t N, int64_t C,
                                                          int64_t HxW, int64_t group, double eps) {
  check_group_norm(input, weight, bias, N, C, HxW, group);
  const DType dt = input.dtype();
  if (input.impl()->is_meta()) {  // the checks above are the meta function (Note [Meta kernels], tools/opgen)
    const Device d = input.device();
    return {empty(input.sizes(), dt, d), empty({N, group}, dt, d), empty({N, group}, dt, d)};
  }
  const Tensor x = contiguous_values(input);
  Tensor y = empty(input.sizes(), dt);
  const auto rows = static_cast<size_t>(N * group);
  std::vector<double> mean(rows, std::numeric_limits<double>::quiet_NaN()), rstd(rows, mean[0]);
  const std::vector<double> w = doubles(weight, C, 1), b = doubles(bias, C, 0);
  if (input.numel() > 0) {
    group_norm_forward_stub(x, ChannelLayout{N, C, HxW}, group, w.data(), b.data(), eps, mean.data(), rstd.data(), y);
  }
  return {y, from_doubles(mean, {N, group}, dt), from_doubles(rstd, {N, group}, dt)};
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool /*cudnn_enabled*/) {
  KILN_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t n = input.size(0), c = input.size(1);
  KILN_CHECK(num_groups > 0 && c % num_groups == 0, "Expected number of channels in input to be divisible by "
             "num_groups, but got input of shape ", input.sizes(), " and num_groups=", num_groups);
  int64_t hxw = 1;
  for (int64_t d = 2; d < input.dim(); ++d) hxw *= input.size(d);
  return std::get<0>(kiln::native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps));
}

namespace {

/// What every group_norm backward op reads, checked in the op's name: the
/// layout, and (for a non-empty input) the contiguous input and grad_out and
/// the saved statistics as doubles.
struct GroupNormBackwardInputs {
  ChannelLayout l;
  Tensor x, g;
  std::vector<double> mean, rstd;
};

GroupNormBackwardInputs group_norm_backward_inputs(const char* op, const Tensor& grad_out, const Tensor& input,
                                                   const std::optional<Tensor>& weight, const Tensor& mean,
                                                   const Tensor& rstd, int64_t group) {
  GroupNormBackwardInputs in{layout_of(input), {}, {}, {}, {}};
  const ChannelLayout& l = in.l;
  check_group_norm(input, weight, std::nullopt, l.n, l.c, l.hw, group);
  check_backward_inputs(op, grad_out, input);
  check_saved(op, "mean", mean, l.n * group);
  check_saved(op, "rstd", rstd, l.n * group);
  if (input.numel() > 0 && !input.impl()->is_meta()) {  // meta: the checks above are the meta function
    in.x = contiguous_values(input);
    in.g = same_dtype_contiguous(grad_out, input.dtype());
    in.mean = doubles(mean, l.n * group, 0);
    in.rstd = doubles(rstd, l.n * group, 1);
  }
  return in;
}

/// dweight[c] = sum over samples n of rstd[n, c's group] * sum_gd[n, c], in
/// sample order (so it does not depend on the thread count).
std::vector<double> group_norm_weight_grad(const ChannelLayout& l, int64_t group, const std::vector<double>& rstd,
                                           const std::vector<double>& sum_gd) {
  std::vector<double> dw(static_cast<size_t>(l.c), 0.0);
  if (sum_gd.empty()) return dw;
  const int64_t cg = l.c / group;
  for (int64_t i = 0; i < l.n; ++i) {
    for (int64_t c = 0; c < l.c; ++c) {
      dw[static_cast<size_t>(c)] +=
          rstd[static_cast<size_t>(i * group + c / cg)] * sum_gd[static_cast<size_t>(i * l.c + c)];
    }
  }
  return dw;
}

}  // namespace

Tensor group_norm_backward_input_cpu(const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
                                     const Tensor& mean, const Tensor& rstd, int64_t group) {
  const GroupNormBackwardInputs in =
      group_norm_backward_inputs("_group_norm_backward_input", grad_out, input, weight, mean, rstd, group);
  Tensor dx = empty(input.sizes(), input.dtype(), input.device());
  if (input.numel() == 0 || input.impl()->is_meta()) return dx;
  const std::vector<double> w = doubles(weight, in.l.c, 1);
  group_norm_backward_input_stub(in.g, in.x, in.l, group, in.mean.data(), in.rstd.data(), w.data(), dx, nullptr,
                                 nullptr);
  return dx;
}

/// All three gradients from one pass per (sample, group): the input gradient's
/// kernel also hands out each (sample, channel)'s sums of g and g (x - mean), and
/// dweight[c] = sum_n rstd[n, c's group] * sum_gd[n, c], dbias[c] = sum_n sum_g[n, c].
/// Reads grad_out and input once, where the separate ops read them three and
/// two times.
std::tuple<Tensor, Tensor, Tensor> group_norm_backward_cpu(const Tensor& grad_out, const Tensor& input,
                                                           const std::optional<Tensor>& weight, const Tensor& mean,
                                                           const Tensor& rstd, int64_t group) {
  const GroupNormBackwardInputs in =
      group_norm_backward_inputs("_group_norm_backward", grad_out, input, weight, mean, rstd, group);
  const ChannelLayout& l = in.l;
  Tensor dx = empty(input.sizes(), input.dtype(), input.device());
  const DType pdt = param_grad_dtype(input.dtype());
  if (input.impl()->is_meta()) return {dx, empty({l.c}, pdt, input.device()), empty({l.c}, pdt, input.device())};
  std::vector<double> sum_g, sum_gd, db(static_cast<size_t>(l.c), 0.0);
  if (input.numel() > 0) {
    const std::vector<double> w = doubles(weight, l.c, 1);
    sum_g.resize(static_cast<size_t>(l.n * l.c));
    sum_gd.resize(sum_g.size());
    group_norm_backward_input_stub(in.g, in.x, l, group, in.mean.data(), in.rstd.data(), w.data(), dx, sum_g.data(),
                                   sum_gd.data());
    for (size_t at = 0; at < sum_g.size(); ++at) db[at % static_cast<size_t>(l.c)] += sum_g[at];  // in sample order
  }
  return {dx, from_doubles(group_norm_weight_grad(l, group, in.rstd, sum_gd), {l.c}, pdt),
          from_doubles(db, {l.c}, pdt)};
}

Tensor group_norm_backward_weight_cpu(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                      const Tensor& rstd, int64_t group) {
  const GroupNormBackwardInputs in =
      group_norm_backward_inputs("_group_norm_backward_weight", grad_out, input, std::nullopt, mean, rstd, group);
  if (input.impl()->is_meta()) return empty({in.l.c}, param_grad_dtype(input.dtype()), input.device());
  std::vector<double> sum_g, sum_gd;
  if (input.numel() > 0) group_grad_sums(in.g, in.x, in.l, group, in.mean, sum_g, sum_gd);
  return from_doubles(group_norm_weight_grad(in.l, group, in.rstd, sum_gd), {in.l.c}, param_grad_dtype(input.dtype()));
}

}  // namespace kiln::native
