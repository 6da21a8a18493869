// The helper functions derivative formulas in ops.yaml may call besides ops
// (the list is tools/opgen/derivatives.py HELPERS). Generated backward nodes
// (AutogradKernels.cpp) call these with the names the formulas use.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "eager/autograd/LinalgFormulas.h"  // the triangular solve's and the decompositions'
#include "eager/autograd/NormFormulas.h"  // native_group_norm's, through its statistics too
#include "eager/autograd/RnnFormulas.h"  // the fused recurrent cells' and the whole-sequence LSTM's
#include "eager/autograd/ScatterReduceFormulas.h"  // scatter_reduce's
#include "eager/autograd/Variable.h"
#include "eager/autograd/ViewAutograd.h"
#include "eager/core/Scalar.h"
#include "kiln/generated/Functions.h"

namespace kiln::autograd::formula {

/// grad * conj(alpha) (the Wirtinger convention of Note [Complex dtypes]), skipped when alpha is 1.
[[nodiscard]] inline Tensor maybe_multiply(const Tensor& grad, const Scalar& alpha) {
  if (alpha.equals(1.0)) return grad;
  if (alpha.is_complex()) return kiln::mul(grad, Scalar(std::conj(alpha.to_complex_double())));
  // alpha * grad as 0 + alpha * grad: add's alpha path, the one multiply-by-scalar every build has.
  return kiln::add(kiln::zeros(grad.sizes(), grad.dtype(), grad.device()), grad, alpha);
}

/// The complex conjugate of a complex tensor (recorded, so double backward sees it); a real tensor itself.
[[nodiscard]] inline Tensor conj_if_complex(const Tensor& t) {
  return t.defined() && is_complex(t.dtype()) ? kiln::conj_physical(t) : t;
}
/// The same for a number argument (mul.Scalar's other): a complex Scalar conjugated.
[[nodiscard]] inline Scalar conj_if_complex(const Scalar& s) {
  return s.is_complex() ? Scalar(std::conj(s.to_complex_double())) : s;
}

/// sgn's gradient: zero for a real input. For a complex z with s = z/|z| only the
/// motion along the unit circle survives: (g - s Re(conj(s) g)) / |z|, 0 where z is 0.
[[nodiscard]] inline Tensor sgn_backward(const Tensor& self, const Tensor& grad, const Tensor& result) {
  if (!is_complex(self.dtype())) return kiln::zeros(grad.sizes(), grad.dtype(), grad.device());
  const Tensor magnitude = kiln::abs(self);
  const Tensor inverse = kiln::where(kiln::eq(magnitude, Scalar(0.0)),
                                     kiln::zeros(magnitude.sizes(), magnitude.dtype(), magnitude.device()),
                                     kiln::reciprocal(magnitude));
  const Tensor radial = kiln::view_as_real(kiln::mul(kiln::conj_physical(result), grad)).select(-1, 0);
  return kiln::mul(kiln::sub(grad, kiln::mul(result, radial)), inverse);
}

/// tanh's gradient: tanh_backward for real results, grad * conj(1 - y^2) through ops for complex ones.
[[nodiscard]] inline Tensor tanh_grad(const Tensor& grad, const Tensor& result) {
  if (!is_complex(result.dtype())) return kiln::tanh_backward(grad, result);
  return kiln::mul(grad, kiln::conj_physical(kiln::rsub(kiln::mul(result, result), Scalar(1.0))));
}

/// sigmoid's gradient: sigmoid_backward for real results, grad * conj(y (1 - y)) through ops for complex ones.
[[nodiscard]] inline Tensor sigmoid_grad(const Tensor& grad, const Tensor& result) {
  if (!is_complex(result.dtype())) return kiln::sigmoid_backward(grad, result);
  return kiln::mul(grad, kiln::conj_physical(kiln::mul(result, kiln::rsub(result, Scalar(1.0)))));
}

/// silu's gradient; for complex z, grad * conj(d/dz z sigmoid(z)) = grad * conj(s (1 + z (1 - s))), s = sigmoid(z).
[[nodiscard]] inline Tensor silu_grad(const Tensor& grad, const Tensor& self) {
  if (!is_complex(self.dtype())) return kiln::silu_backward(grad, self);
  const Tensor s = kiln::sigmoid(self);
  const Tensor slope = kiln::mul(s, kiln::add(kiln::mul(self, kiln::rsub(s, Scalar(1.0))), Scalar(1.0)));
  return kiln::mul(grad, kiln::conj_physical(slope));
}

// The FFTs' gradients (eager/ops/fft.yaml), as PyTorch's: each is the adjoint transform.
/// _fft_c2c: the transform in the other direction with the same normalization.
[[nodiscard]] inline Tensor fft_c2c_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization,
                                             bool forward) {
  return kiln::_fft_c2c(grad, dim, normalization, !forward);
}

/// _fft_r2c: a onesided gradient padded with zeros to the input's length, transformed back, real part.
[[nodiscard]] inline Tensor fft_r2c_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization,
                                             bool onesided, IntArrayRef self_sizes) {
  Tensor full = grad;
  const int64_t last = wrap_dim(dim.back(), grad.dim());
  if (onesided && self_sizes[static_cast<size_t>(last)] > grad.size(last)) {
    DimVector pad_sizes(grad.sizes());
    pad_sizes[static_cast<size_t>(last)] = self_sizes[static_cast<size_t>(last)] - grad.size(last);
    const Tensor parts[] = {grad, kiln::zeros(pad_sizes, grad.dtype(), grad.device())};
    full = kiln::cat(parts, last);
  }
  return kiln::view_as_real(kiln::_fft_c2c(full, dim, normalization, false)).select(-1, 0);
}

/// _fft_c2r: the onesided r2c of grad, with the entries whose mirror images the forward
/// filled in by conjugate symmetry (1 .. n - onesided length) counted twice.
[[nodiscard]] inline Tensor fft_c2r_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization) {
  Tensor result = kiln::_fft_r2c(grad, dim, normalization, true);
  const int64_t last = wrap_dim(dim.back(), grad.dim());
  const int64_t doubled = grad.size(last) - result.size(last);
  if (doubled <= 0) return result;
  DimVector weight_sizes(static_cast<size_t>(result.dim()), 1);
  weight_sizes[static_cast<size_t>(last)] = result.size(last);
  const DType real_dtype = to_real_value_type(result.dtype());
  Tensor weights = kiln::ones(weight_sizes, real_dtype, result.device());
  weights.narrow(last, 1, doubled).fill_(Scalar(2.0));
  return kiln::mul(result, weights);
}

[[nodiscard]] inline Tensor zeros_like(const Tensor& t) { return kiln::zeros(t.sizes(), t.dtype(), t.device()); }

[[nodiscard]] inline Tensor to(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : autograd::to_dtype(t, dtype);
}

[[nodiscard]] inline Tensor reshape(const Tensor& t, IntArrayRef shape) {
  return (t.is_contiguous() ? t : autograd::detached_copy(t)).view(shape);
}

// Note [mm's mat2 gradient keeps mat2's layout]
// ---------------------------------------------
// linear(x, w) is addmm(b, x, w.t()): mat2 is column-major. mat1^T @ grad is
// row-major, so after TBackward the weight's gradient would be a transposed
// (stride 1, k) matrix, and every accumulation into w.grad a strided add that
// cannot vectorize. (grad^T @ mat1)^T is the same values laid out as mat2 was,
// so w's gradient comes out contiguous (PyTorch's mm_mat2_backward does this).
[[nodiscard]] inline Tensor mm_mat2_backward(const Tensor& grad, const Tensor& mat1, IntArrayRef sizes,
                                             IntArrayRef strides, const Scalar& alpha) {
  const bool column_major = sizes.size() == 2 && sizes[0] > 1 && sizes[1] > 1 && strides[0] == 1 &&
                            strides[1] == sizes[0];
  if (column_major) return maybe_multiply(kiln::mm(grad.t(), mat1).t(), alpha);
  return maybe_multiply(kiln::mm(mat1.t(), grad), alpha);
}

// softmax's and log_softmax's backward ops differentiated: with o the forward
// output, go the incoming gradient and gi their result,
//   softmax:     gi = o * (go - sum(go * o))  ->  d/do: g * (go - sum(go * o)) - go * sum(g * o)
//   log_softmax: gi = go - exp(o) * sum(go)   ->  d/dgo: g - sum(g * exp(o)), d/do: -g * exp(o) * sum(go)
// (sums along dim, kept). Through ops, so a third derivative records too.
[[nodiscard]] inline Tensor sum_along(const Tensor& t, int64_t dim) {
  const int64_t dims[1] = {dim};
  return kiln::sum(t, IntArrayRef(dims, 1), true);
}

[[nodiscard]] inline Tensor softmax_double_backward(const Tensor& grad, const Tensor& grad_output,
                                                    const Tensor& output, int64_t dim) {
  const Tensor centered = kiln::sub(grad_output, sum_along(kiln::mul(grad_output, output), dim));
  return kiln::sub(kiln::mul(grad, centered), kiln::mul(grad_output, sum_along(kiln::mul(grad, output), dim)));
}

[[nodiscard]] inline Tensor log_softmax_double_backward_grad_output(const Tensor& grad, const Tensor& output,
                                                                    int64_t dim) {
  return kiln::sub(grad, sum_along(kiln::mul(grad, kiln::exp(output)), dim));
}

[[nodiscard]] inline Tensor log_softmax_double_backward_output(const Tensor& grad, const Tensor& grad_output,
                                                               const Tensor& output, int64_t dim) {
  return kiln::neg(kiln::mul(kiln::mul(grad, kiln::exp(output)), sum_along(grad_output, dim)));
}

[[nodiscard]] inline Tensor sum_to(const Tensor& grad, IntArrayRef shape) {
  return autograd::sum_to(grad, shape, "sum_to");
}

/// Gradient of select(dim, index): zeros of the input's shape with grad at index.
[[nodiscard]] inline Tensor select_backward(const Tensor& grad, IntArrayRef input_sizes, int64_t dim, int64_t index) {
  Tensor out = kiln::zeros(input_sizes, grad.dtype(), grad.device());
  (void)out.select(dim, index).copy_(grad);
  return out;
}

/// Gradient of slice(dim, start, end, step): zeros of the input's shape with grad in the slice.
[[nodiscard]] inline Tensor slice_backward(const Tensor& grad, IntArrayRef input_sizes, int64_t dim,
                                           std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  Tensor out = kiln::zeros(input_sizes, grad.dtype(), grad.device());
  (void)kiln::slice(out, dim, start, end, step).copy_(grad);
  return out;
}

/// Gradient of permute(dims): grad permuted by the inverse permutation.
[[nodiscard]] inline Tensor permute_backwards(const Tensor& grad, IntArrayRef dims) {
  DimVector inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i] < 0 ? dims[i] + static_cast<int64_t>(dims.size()) : dims[i];
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(i);
  }
  return grad.permute(inverse);
}

// --- shape ops with several inputs or outputs (eager/ops/shape.yaml) ---------------------

namespace detail {
[[nodiscard]] inline int64_t wrap_dim(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

/// The gradients of a list-returning view op (split, unbind) with undefined
/// ones (outputs nothing used) replaced by zeros of `piece_sizes(i)`.
template <typename PieceSizes>
[[nodiscard]] std::vector<Tensor> defined_pieces(const variable_list& grads, PieceSizes piece_sizes) {
  const Tensor* any = nullptr;
  for (const Tensor& g : grads) {
    if (g.defined()) any = &g;
  }
  std::vector<Tensor> out;
  out.reserve(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    out.push_back(grads[i].defined() ? grads[i] : kiln::zeros(piece_sizes(i), any->dtype(), any->device()));
  }
  return out;
}
}  // namespace detail

/// Gradient of split_with_sizes: the pieces' gradients concatenated along dim.
[[nodiscard]] inline Tensor split_with_sizes_backward(const variable_list& grads, IntArrayRef split_sizes, int64_t dim,
                                                      IntArrayRef input_sizes) {
  dim = detail::wrap_dim(dim, static_cast<int64_t>(input_sizes.size()));
  const auto pieces = detail::defined_pieces(grads, [&](size_t i) {
    DimVector shape(input_sizes);
    shape[static_cast<size_t>(dim)] = split_sizes[i];
    return shape;
  });
  return kiln::cat(pieces, dim);
}

/// Gradient of split(split_size): as split_with_sizes, the last piece possibly shorter.
[[nodiscard]] inline Tensor split_backward(const variable_list& grads, int64_t split_size, int64_t dim,
                                           IntArrayRef input_sizes) {
  dim = detail::wrap_dim(dim, static_cast<int64_t>(input_sizes.size()));
  const int64_t length = input_sizes[static_cast<size_t>(dim)];
  DimVector sizes;
  for (size_t i = 0; i < grads.size(); ++i) {
    sizes.push_back(std::min(split_size, length - static_cast<int64_t>(i) * split_size));
  }
  return split_with_sizes_backward(grads, sizes, dim, input_sizes);
}

/// Gradient of unbind: the pieces' gradients stacked along dim.
[[nodiscard]] inline Tensor unbind_backward(const variable_list& grads, int64_t dim) {
  const Tensor* any = nullptr;
  for (const Tensor& g : grads) {
    if (g.defined()) any = &g;
  }
  const auto pieces = detail::defined_pieces(grads, [&](size_t) { return DimVector(any->sizes()); });
  return kiln::stack(pieces, detail::wrap_dim(dim, any->dim() + 1));
}

/// Gradient of cat for each input: grad narrowed to that input's extent along
/// dim (legacy empty 1-D inputs, which cat skips, get undefined gradients).
[[nodiscard]] inline std::vector<Tensor> cat_tensors_backward(const Tensor& grad, const std::vector<Tensor>& tensors,
                                                              int64_t dim) {
  dim = detail::wrap_dim(dim, grad.dim());
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (t.dim() == 1 && t.size(0) == 0 && grad.dim() != 1) {
      out.emplace_back();
      continue;
    }
    const int64_t length = t.size(dim);
    out.push_back(kiln::narrow(grad, dim, offset, length));
    offset += length;
  }
  return out;
}

/// Gradient of repeat(repeats): each repeated block's gradient summed back onto the input.
[[nodiscard]] inline Tensor repeat_backward(const Tensor& grad, IntArrayRef repeats, IntArrayRef input_sizes) {
  const size_t lead = repeats.size() - input_sizes.size();
  // grad viewed as (r0, s0, r1, s1, ...) (s = 1 for the leading new dims), summed over every r.
  DimVector split_shape, summed_shape, padded_sizes;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t size = i < lead ? 1 : input_sizes[i - lead];
    split_shape.push_back(repeats[i]);
    split_shape.push_back(size);
    summed_shape.push_back(1);
    summed_shape.push_back(size);
    padded_sizes.push_back(size);
  }
  const Tensor summed = sum_to(formula::reshape(grad, split_shape), summed_shape);
  return formula::reshape(summed, input_sizes);
}

/// Gradient of diagonal: zeros of the input's shape with grad written into the diagonal.
[[nodiscard]] inline Tensor diagonal_backward(const Tensor& grad, IntArrayRef input_sizes, int64_t offset, int64_t dim1,
                                              int64_t dim2) {
  Tensor out = kiln::zeros(input_sizes, grad.dtype(), grad.device());
  (void)kiln::diagonal(out, offset, dim1, dim2).copy_(grad);
  return out;
}

// --- indexing (eager/ops/indexing.yaml) ----------------------------------------------------

/// Gradient of take: grad accumulated at the flat indices (repeated indices add up).
[[nodiscard]] inline Tensor take_backward(const Tensor& grad, const Tensor& self, const Tensor& index) {
  const Tensor flat = kiln::zeros({self.numel()}, grad.dtype(), grad.device());
  const std::vector<std::optional<Tensor>> indices{formula::reshape(index, {index.numel()})};
  return formula::reshape(kiln::index_put(flat, indices, formula::reshape(grad, {grad.numel()}), true), self.sizes());
}

/// Gradient of masked_scatter w.r.t. source: the masked elements of grad in
/// order, padded with zeros to source's size.
[[nodiscard]] inline Tensor masked_scatter_backward(const Tensor& grad, const Tensor& mask, IntArrayRef source_sizes) {
  int64_t numel = 1;
  for (int64_t s : source_sizes) numel *= s;
  const Tensor selected = kiln::masked_select(grad, mask);
  const int64_t missing = numel - selected.numel();
  if (missing == 0) return formula::reshape(selected, source_sizes);
  const Tensor padding = kiln::zeros({missing}, grad.dtype(), grad.device());
  const std::vector<Tensor> pieces{selected, padding};
  return formula::reshape(kiln::cat(pieces, 0), source_sizes);
}

/// Gradient of repeat_interleave: each element's repeats summed back (index_add
/// of grad along dim at the index each output came from).
[[nodiscard]] inline Tensor repeat_interleave_backward(const Tensor& grad, const Tensor& self, const Tensor& repeats,
                                                       std::optional<int64_t> dim) {
  const Tensor input = dim ? self : formula::reshape(self, {self.numel()});
  const int64_t d = dim ? detail::wrap_dim(*dim, self.dim()) : 0;
  const int64_t n = input.dim() == 0 ? 1 : input.size(d);
  const Tensor source_index = kiln::repeat_interleave(kiln::arange(n, DType::Int64, grad.device()),
                                                       repeats.numel() == 1 ? formula::reshape(repeats, {1}).expand({n}) : repeats);
  const Tensor out = kiln::index_add(kiln::zeros(input.sizes(), grad.dtype(), grad.device()), d, source_index, grad);
  return formula::reshape(out, self.sizes());
}

[[nodiscard]] inline Tensor repeat_interleave_backward(const Tensor& grad, const Tensor& self, int64_t repeats,
                                                       std::optional<int64_t> dim) {
  const Tensor input = dim ? self : formula::reshape(self, {self.numel()});
  const int64_t d = dim ? detail::wrap_dim(*dim, self.dim()) : 0;
  const int64_t n = input.dim() == 0 ? 1 : input.size(d);
  const Tensor source_index = kiln::repeat_interleave(kiln::arange(n, DType::Int64, grad.device()), repeats);
  const Tensor out = kiln::index_add(kiln::zeros(input.sizes(), grad.dtype(), grad.device()), d, source_index, grad);
  return formula::reshape(out, self.sizes());
}

/// Every element of an int list negated.
[[nodiscard]] inline DimVector negated(IntArrayRef values) {
  DimVector out(values);
  for (auto& v : out) v = -v;
  return out;
}

/// The last n sizes of t (t has at least n dims): im2col's and adaptive pooling's backward.
[[nodiscard]] inline DimVector last_sizes(const Tensor& t, int64_t n) {
  const IntArrayRef sizes = t.sizes();
  return DimVector(sizes.subspan(sizes.size() - static_cast<size_t>(n)));
}

// --- binary and ternary pointwise ops (eager/ops/pointwise_binary.yaml) ---------------

/// A number argument as a double (formulas doing arithmetic on a Scalar or float argument).
[[nodiscard]] inline double as_double(const Scalar& s) { return s.to_double(); }
[[nodiscard]] inline double as_double(double d) { return d; }

namespace detail {
[[nodiscard]] inline bool is_zero(const Scalar& s) { return s.is_bool() ? !s.to_bool() : s.equals(0.0); }
[[nodiscard]] inline Scalar minus_one(const Scalar& s) {
  if (s.is_complex()) return Scalar(s.to_complex_double() - 1.0);
  return s.is_floating_point() ? Scalar(s.to_double() - 1.0) : Scalar(s.to_int64() - 1);
}
}  // namespace detail

/// d/dself of self ** exponent (a number): exponent * self ** (exponent - 1), zeros for exponent 0.
[[nodiscard]] inline Tensor pow_backward(const Tensor& grad, const Tensor& self, const Scalar& exponent) {
  if (detail::is_zero(exponent)) return formula::zeros_like(grad);
  return kiln::mul(grad, conj_if_complex(kiln::mul(kiln::pow(self, detail::minus_one(exponent)), exponent)));
}

/// d/dself of self ** exponent (a tensor): 0 where the exponent is 0 (so 0 ** 0 has gradient 0, as torch).
[[nodiscard]] inline Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent) {
  const Tensor derivative = conj_if_complex(kiln::mul(exponent, kiln::pow(self, kiln::sub(exponent, 1))));
  return kiln::where(kiln::eq(exponent, 0), 0, kiln::mul(grad, derivative));
}

/// d/dexponent of self ** exponent: result * log(self), 0 where self is 0 and
/// the exponent is not negative (torch's convention: 0 ** e has no log term).
[[nodiscard]] inline Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                                                  const Tensor& result) {
  if (is_complex(self.dtype()) || is_complex(exponent.dtype())) {
    // complex numbers are unordered: 0 ** e has no log term where e's real part is not negative
    const Tensor e = is_complex(exponent.dtype()) ? kiln::select(kiln::view_as_real(exponent), -1, 0) : exponent;
    const Tensor no_log_term = kiln::logical_and(kiln::eq(self, 0), kiln::ge(e, 0));
    return kiln::mul(grad, conj_if_complex(kiln::where(no_log_term, 0, kiln::mul(result, kiln::log(self)))));
  }
  const Tensor no_log_term = kiln::logical_and(kiln::eq(self, 0), kiln::ge(exponent, 0));
  // log in the result's dtype, as torch: a bfloat16 base under a float32 exponent takes a float32 log
  const Tensor log_self = kiln::log(to(self, result.dtype()));
  return kiln::mul(grad, kiln::where(no_log_term, 0, kiln::mul(result, log_self)));
}

/// d/dexponent of base ** exponent for a number base.
[[nodiscard]] inline Tensor pow_backward_exponent(const Tensor& grad, const Scalar& self, const Tensor& exponent,
                                                  const Tensor& result) {
  if (self.is_complex() || is_complex(exponent.dtype())) {
    return kiln::mul(grad, conj_if_complex(kiln::mul(result, Scalar(std::log(self.to_complex_double())))));
  }
  if (self.to_double() == 0.0) {
    return kiln::mul(grad, kiln::where(kiln::ge(exponent, 0), 0, kiln::mul(result, -INFINITY)));
  }
  return kiln::mul(grad, kiln::mul(result, std::log(self.to_double())));
}

/// clamp(self, min, max) with number bounds: grad where min <= self <= max, 0 elsewhere.
[[nodiscard]] inline Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                                           const std::optional<Scalar>& max) {
  if (min && max) return kiln::where(kiln::logical_and(kiln::ge(self, *min), kiln::le(self, *max)), grad, 0);
  if (min) return kiln::where(kiln::ge(self, *min), grad, 0);
  if (max) return kiln::where(kiln::le(self, *max), grad, 0);
  return grad;
}

/// clamp(self, min, max) with tensor bounds: as above, elementwise.
[[nodiscard]] inline Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Tensor>& min,
                                           const std::optional<Tensor>& max) {
  if (min && max) return kiln::where(kiln::logical_and(kiln::ge(self, *min), kiln::le(self, *max)), grad, 0);
  if (min) return kiln::where(kiln::ge(self, *min), grad, 0);
  if (max) return kiln::where(kiln::le(self, *max), grad, 0);
  return grad;
}

/// d/dmin of clamp(self, min, max): grad where self < min (and min < max: max wins over min), else 0.
[[nodiscard]] inline Tensor clamp_backward_min(const Tensor& grad, const Tensor& self, const std::optional<Tensor>& min,
                                               const std::optional<Tensor>& max) {
  if (!min) return Tensor();
  const Tensor below = kiln::lt(self, *min);
  return kiln::where(max ? kiln::logical_and(below, kiln::lt(*min, *max)) : below, grad, 0);
}

/// d/dmax of clamp(self, min, max): grad where self > max, or where max <= min (max wins), else 0.
[[nodiscard]] inline Tensor clamp_backward_max(const Tensor& grad, const Tensor& self, const std::optional<Tensor>& min,
                                               const std::optional<Tensor>& max) {
  if (!max) return Tensor();
  const Tensor above = kiln::gt(self, *max);
  return kiln::where(min ? kiln::logical_or(above, kiln::ge(*min, *max)) : above, grad, 0);
}

// --- activations' second derivatives (eager/ops/activation.yaml) --------------------------
// Written with kiln ops, so they are differentiable in turn. `grad` is the
// gradient flowing into the backward op's result.

/// d/dself of gelu_backward(grad_output, self, approximate), times grad.
[[nodiscard]] inline Tensor gelu_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self,
                                                 std::string_view approximate) {
  const Tensor gg = kiln::mul(grad, grad_output);
  const Tensor x_sq = kiln::mul(self, self);
  if (approximate == "tanh") {
    constexpr double kBeta = 0.79788456080286535588;  // sqrt(2 / pi)
    constexpr double kKappa = 0.044715;
    const Tensor inner = kiln::mul(kiln::add(self, kiln::mul(kiln::mul(x_sq, self), kKappa)), kBeta);
    const Tensor t = kiln::tanh(inner);
    const Tensor one_minus_t_sq = kiln::rsub(kiln::mul(t, t), 1);
    const Tensor du = kiln::mul(kiln::add(kiln::mul(x_sq, 3 * kKappa), 1), kBeta);  // u'
    const Tensor d2u = kiln::mul(self, 6 * kBeta * kKappa);                          // u''
    // gelu'' = (1 - t^2) (u' + x/2 (u'' - 2 t u'^2))
    const Tensor bracket = kiln::sub(d2u, kiln::mul(kiln::mul(t, kiln::mul(du, du)), 2));
    return kiln::mul(gg, kiln::mul(one_minus_t_sq, kiln::add(du, kiln::mul(kiln::mul(self, 0.5), bracket))));
  }
  constexpr double kPdfScale = 0.39894228040143267794;  // 1 / sqrt(2 pi)
  const Tensor pdf = kiln::mul(kiln::exp(kiln::mul(x_sq, -0.5)), kPdfScale);
  return kiln::mul(gg, kiln::mul(pdf, kiln::rsub(x_sq, 2)));  // gelu'' = pdf (2 - x^2)
}

/// d/dself of mish_backward(grad_output, self), times grad:
/// mish'' = (1 - t^2) s (2 + x (1 - s) - 2 x s t), s = sigmoid(x), t = tanh(softplus(x)).
[[nodiscard]] inline Tensor mish_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self) {
  const Tensor s = kiln::sigmoid(self);
  const Tensor t = kiln::tanh(kiln::softplus(self));
  const Tensor one_minus_t_sq = kiln::rsub(kiln::mul(t, t), 1);
  const Tensor bracket = kiln::sub(kiln::add(kiln::mul(self, kiln::rsub(s, 1)), 2),
                                   kiln::mul(kiln::mul(kiln::mul(self, s), t), 2));
  return kiln::mul(kiln::mul(grad, grad_output), kiln::mul(kiln::mul(one_minus_t_sq, s), bracket));
}

/// d/dself of softplus_backward, times `grad` (grad * grad_output):
/// beta sigmoid(beta x) (1 - sigmoid(beta x)) below the threshold, 0 above it.
[[nodiscard]] inline Tensor softplus_double_backward(const Tensor& grad, const Tensor& self, const Scalar& beta,
                                                     const Scalar& threshold) {
  const Tensor bx = kiln::mul(self, beta);
  const Tensor s = kiln::sigmoid(bx);
  const Tensor d2 = kiln::mul(kiln::mul(s, kiln::rsub(s, 1)), beta);
  return kiln::where(kiln::le(bx, threshold), kiln::mul(grad, d2), 0);
}

/// d/dself_or_result of elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result), times grad.
[[nodiscard]] inline Tensor elu_double_backward(const Tensor& grad, const Tensor& grad_output, const Scalar& alpha,
                                                const Scalar& scale, const Scalar& input_scale, bool is_result,
                                                const Tensor& self_or_result) {
  const double negcoef = alpha.to_double() * scale.to_double();
  const double negiptcoef = input_scale.to_double();
  const Tensor gg = kiln::mul(grad, grad_output);
  const Tensor negative = kiln::le(self_or_result, 0);
  if (is_result) return kiln::where(negative, kiln::mul(gg, negiptcoef), 0);
  const Tensor d2 = kiln::mul(kiln::exp(kiln::mul(self_or_result, negiptcoef)), negiptcoef * negiptcoef * negcoef);
  return kiln::where(negative, kiln::mul(gg, d2), 0);
}

/// d/dself of logit_backward(grad_output, self, eps), times grad: (2x - 1) / (x (1 - x))^2,
/// 0 outside [eps, 1 - eps] when eps is given.
[[nodiscard]] inline Tensor logit_double_backward(const Tensor& grad, const Tensor& grad_output, const Tensor& self,
                                                  std::optional<double> eps) {
  const Tensor q = kiln::mul(self, kiln::rsub(self, 1));
  const Tensor d2 = kiln::div(kiln::sub(kiln::mul(self, 2), 1), kiln::mul(q, q));
  const Tensor result = kiln::mul(kiln::mul(grad, grad_output), d2);
  if (!eps.has_value() || *eps < 0) return result;
  const Tensor inside = kiln::logical_and(kiln::ge(self, *eps), kiln::le(self, 1.0 - *eps));
  return kiln::where(inside, result, 0);
}

// --- reductions and scans (eager/ops/reduction.yaml) -------------------------------------

namespace detail {
/// The reduced dims of a reduction, wrapped and sorted; empty means every dim.
[[nodiscard]] inline DimVector reduced_dims(std::nullopt_t, int64_t) { return {}; }
[[nodiscard]] inline DimVector reduced_dims(IntArrayRef dims, int64_t ndim) {
  DimVector out;
  for (int64_t d : dims) out.push_back(wrap_dim(d, std::max<int64_t>(ndim, 1)));
  std::sort(out.begin(), out.end());
  return out;
}
[[nodiscard]] inline DimVector reduced_dims(const DimVector& dims, int64_t ndim) {
  return reduced_dims(IntArrayRef(dims), ndim);
}
[[nodiscard]] inline DimVector reduced_dims(const std::optional<DimVector>& dims, int64_t ndim) {
  return dims ? reduced_dims(IntArrayRef(*dims), ndim) : DimVector{};
}
[[nodiscard]] inline DimVector reduced_dims(int64_t dim, int64_t ndim) {
  return DimVector{wrap_dim(dim, std::max<int64_t>(ndim, 1))};
}

/// A reduction's result (or gradient) with its reduced dims back as size 1,
/// so it broadcasts against the input.
[[nodiscard]] inline Tensor restore_reduced_dims(const Tensor& t, IntArrayRef input_sizes, const DimVector& dims,
                                                 bool keepdim) {
  const int64_t ndim = static_cast<int64_t>(input_sizes.size());
  if (keepdim || ndim == 0) return t;
  if (dims.empty()) {
    return formula::reshape(t, DimVector(static_cast<size_t>(ndim), 1));
  }
  Tensor out = t;
  for (int64_t d : dims) out = out.unsqueeze(d);
  return out;
}
}  // namespace detail

/// Gradient of sum over dims: grad broadcast back over the reduced dims.
template <typename Dims>
[[nodiscard]] Tensor sum_backward(const Tensor& grad, IntArrayRef input_sizes, const Dims& dims, bool keepdim) {
  const DimVector d = detail::reduced_dims(dims, static_cast<int64_t>(input_sizes.size()));
  return detail::restore_reduced_dims(grad, input_sizes, d, keepdim).expand(input_sizes);
}

/// Gradient of mean over dims: sum's, divided by the number of reduced elements.
template <typename Dims>
[[nodiscard]] Tensor mean_backward(const Tensor& grad, IntArrayRef input_sizes, const Dims& dims, bool keepdim) {
  const DimVector d = detail::reduced_dims(dims, static_cast<int64_t>(input_sizes.size()));
  int64_t count = 1;
  for (size_t i = 0; i < input_sizes.size(); ++i) {
    if (d.empty() || std::find(d.begin(), d.end(), static_cast<int64_t>(i)) != d.end()) count *= input_sizes[i];
  }
  return kiln::div(sum_backward(grad, input_sizes, dims, keepdim), static_cast<double>(count));
}

/// Gradient of amax/amin (and full max/min): grad shared evenly among the elements equal to the result.
template <typename Dims>
[[nodiscard]] Tensor amax_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const Dims& dims,
                                   bool keepdim) {
  const DimVector d = detail::reduced_dims(dims, self.dim());
  const Tensor r = detail::restore_reduced_dims(result, self.sizes(), d, keepdim);
  const Tensor g = detail::restore_reduced_dims(grad, self.sizes(), d, keepdim);
  const Tensor mask = formula::to(kiln::eq(self, r), self.dtype());
  const Tensor count = d.empty() ? kiln::sum(mask) : kiln::sum(mask, IntArrayRef(d), true);
  return kiln::mul(kiln::div(g, count), mask);
}

/// Gradient of max.dim/min.dim: grad scattered to the index each value came from.
[[nodiscard]] inline Tensor value_selecting_reduction_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                                               IntArrayRef input_sizes, bool keepdim) {
  const int64_t ndim = static_cast<int64_t>(input_sizes.size());
  if (ndim == 0) return grad;
  const DimVector d = detail::reduced_dims(dim, ndim);
  const Tensor g = detail::restore_reduced_dims(grad, input_sizes, d, keepdim);
  const Tensor i = detail::restore_reduced_dims(indices, input_sizes, d, keepdim);
  // scatter_ into the fresh zeros: the out-of-place scatter would first copy them
  // (topk 10 of [64, 4096] fwd+bwd: the copy was a third of the backward).
  return kiln::zeros(input_sizes, grad.dtype(), grad.device()).scatter_(d[0], i, g);
}

/// Gradient of prod: result / self where self != 0; where one element of a
/// product is 0, its gradient is the product of the others (0 with two zeros).
template <typename Dims>
[[nodiscard]] Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const Dims& dims,
                                   bool keepdim) {
  const DimVector d = detail::reduced_dims(dims, self.dim());
  const Tensor g = detail::restore_reduced_dims(grad, self.sizes(), d, keepdim);
  const Tensor r = detail::restore_reduced_dims(result, self.sizes(), d, keepdim);
  const Tensor is_zero = kiln::eq(self, 0);
  const Tensor nonzero = kiln::where(is_zero, 1, self);
  const Tensor zeros = formula::to(is_zero, self.dtype());
  const Tensor zero_count = d.empty() ? kiln::sum(zeros) : kiln::sum(zeros, IntArrayRef(d), true);
  const Tensor others = d.empty() ? kiln::prod(nonzero) : kiln::prod(nonzero, d[0], true);
  const Tensor at_zero = kiln::where(kiln::eq(zero_count, 1), others, 0);
  return kiln::mul(g, conj_if_complex(kiln::where(is_zero, at_zero, kiln::div(r, nonzero))));
}

/// Gradient of var over dims: 2 (x - mean) / (N - correction), times grad.
[[nodiscard]] inline Tensor var_backward(const Tensor& grad, const Tensor& self, const std::optional<DimVector>& dims,
                                         const std::optional<Scalar>& correction, bool keepdim) {
  const DimVector d = detail::reduced_dims(dims, self.dim());
  int64_t count = 1;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (d.empty() || std::find(d.begin(), d.end(), i) != d.end()) count *= self.size(i);
  }
  const double c = correction ? correction->to_double() : 1.0;
  const Tensor g = detail::restore_reduced_dims(grad, self.sizes(), d, keepdim);
  const Tensor mean = d.empty() ? kiln::mean(self) : kiln::mean(self, IntArrayRef(d), true);
  // PyTorch's 2 / (N - correction), unclamped: a correction past N gives a negative factor (and -0 gradients at
  // a single element), one equal to N gives inf (nan gradients), as torch's.
  return kiln::mul(kiln::mul(g, kiln::sub(self, mean)), 2.0 / (static_cast<double>(count) - c));
}

/// Gradient of aminmax: amax_backward of the min's and of the max's gradient, summed.
[[nodiscard]] inline Tensor aminmax_backward(const Tensor& grad_min, const Tensor& grad_max, const Tensor& self,
                                             const Tensor& min, const Tensor& max, std::optional<int64_t> dim,
                                             bool keepdim) {
  const DimVector d = dim ? detail::reduced_dims(*dim, self.dim()) : DimVector{};
  return kiln::add(amax_backward(grad_min, self, min, d, keepdim), amax_backward(grad_max, self, max, d, keepdim));
}

/// Gradient of linalg_vector_norm: for ord p, grad * sign(x) |x|^(p-1) / norm^(p-1)
/// (x / norm for 2, sign(x) for 1; inf norms share grad among the elements
/// reaching the norm; 0 has none), 0 where the norm is 0 — as PyTorch.
[[nodiscard]] inline Tensor linalg_vector_norm_backward(const Tensor& grad, const Tensor& self, const Scalar& ord,
                                                        const Tensor& result, const std::optional<DimVector>& dims,
                                                        bool keepdim) {
  const double p = ord.to_double();
  if (p == 0) return kiln::zeros_like(self);
  const DimVector d = detail::reduced_dims(dims, self.dim());
  const Tensor g = detail::restore_reduced_dims(grad, self.sizes(), d, keepdim);
  const Tensor norm = detail::restore_reduced_dims(result, self.sizes(), d, keepdim);
  const Tensor sign = is_complex(self.dtype()) ? kiln::sgn(self) : kiln::sign(self);  // z / |z| for complex
  if (p == 1) return kiln::mul(sign, g);
  if (std::isinf(p)) {
    const Tensor mask = formula::to(kiln::eq(kiln::abs(self), norm), self.dtype());
    const Tensor count = d.empty() ? kiln::sum(mask) : kiln::sum(mask, IntArrayRef(d), true);
    return kiln::mul(kiln::mul(sign, mask), kiln::div(g, count));
  }
  const Tensor zero_norm = kiln::eq(norm, 0);
  if (p == 2) return kiln::where(zero_norm, 0, kiln::mul(self, kiln::div(g, norm)));
  Tensor scaled = kiln::mul(sign, kiln::pow(kiln::abs(self), p - 1));
  if (p < 1) scaled = kiln::where(kiln::eq(self, 0), 0, scaled);  // |0|^(p-1) is inf: 0, as PyTorch
  return kiln::where(zero_norm, 0, kiln::mul(scaled, kiln::div(g, kiln::pow(norm, p - 1))));
}

/// Gradient of cumsum: the reverse cumulative sum of grad.
[[nodiscard]] inline Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  if (grad.dim() == 0) return grad;
  const int64_t dims[1] = {dim};
  return kiln::flip(kiln::cumsum(kiln::flip(grad, IntArrayRef(dims, 1)), dim), IntArrayRef(dims, 1));
}

/// Gradient of cumprod: reverse cumsum of grad * result, over self (the quotient rule), exact
/// before the first zero of each slice (the products past it are 0). At that first zero z it is
/// the reverse cumsum of grad times the cumprod with x_z read as 1 (the products without x_z);
/// past it, 0 (every product keeps x_z). No data-dependent branch: capture records the same ops.
[[nodiscard]] inline Tensor cumprod_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& result) {
  if (grad.dim() == 0) return grad;
  const Tensor quotient = kiln::div(cumsum_backward(kiln::mul(grad, conj_if_complex(result)), dim), conj_if_complex(self));
  const Tensor is_zero = kiln::eq(self, 0);
  const Tensor zeros_so_far = kiln::cumsum(is_zero, dim);  // int64
  const Tensor first_zero = kiln::logical_and(is_zero, kiln::eq(zeros_so_far, 1));
  const Tensor past_first_zero = kiln::logical_and(kiln::gt(zeros_so_far, 0), kiln::logical_not(first_zero));
  const Tensor without_first_zero = kiln::cumprod(kiln::where(first_zero, 1, self), dim);
  const Tensor at_first_zero = cumsum_backward(kiln::mul(grad, conj_if_complex(without_first_zero)), dim);
  return kiln::where(first_zero, at_first_zero, kiln::where(past_first_zero, 0, quotient));
}

/// Gradient of as_strided(input, size, stride, storage_offset): every element
/// of grad goes back to the storage location the view read it from, summed
/// where the view read one location several times, then read out with the
/// input's geometry. The work happens in a buffer shaped like the storage the
/// two geometries span (the input's own layout when it is contiguous and holds
/// the view), through ops, so it is differentiable again. An input whose own
/// elements share memory (an expanded tensor) would need each location's
/// gradient split among its aliases: that raises instead.
[[nodiscard]] inline Tensor as_strided_backward(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef input_strides,
                                                int64_t input_offset, IntArrayRef size, IntArrayRef stride,
                                                std::optional<int64_t> storage_offset) {
  const int64_t view_offset = storage_offset.value_or(input_offset);
  auto numel = [](IntArrayRef sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  };
  auto reach = [](IntArrayRef sizes, IntArrayRef strides) {  // largest offset addressed past the first
    int64_t r = 0;
    for (size_t d = 0; d < sizes.size(); ++d) r += (sizes[d] - 1) * strides[d];
    return r;
  };
  auto same_values = [](IntArrayRef a, IntArrayRef b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); };
  if (numel(input_sizes) == 0 || grad.numel() == 0) return kiln::zeros(input_sizes, grad.dtype(), grad.device());
  KILN_CHECK(!may_overlap(input_sizes, input_strides), "as_strided_backward: the input of as_strided (sizes ",
             input_sizes, ", strides ", input_strides, ") has elements that overlap in memory (an expanded tensor); "
             "its gradient is not supported. Call .contiguous() on it before as_strided.");
  const bool input_is_buffer = same_values(input_strides, contiguous_strides(input_sizes)) &&
                               view_offset >= input_offset &&
                               view_offset + reach(size, stride) < input_offset + numel(input_sizes);
  const int64_t low = input_is_buffer ? input_offset : std::min(input_offset, view_offset);
  const int64_t high = std::max(input_offset + reach(input_sizes, input_strides), view_offset + reach(size, stride));
  Tensor buffer = input_is_buffer ? kiln::zeros(input_sizes, grad.dtype(), grad.device())
                                  : kiln::zeros(DimVector{high - low + 1}, grad.dtype(), grad.device());
  if (!may_overlap(size, stride)) {
    (void)kiln::as_strided(buffer, size, stride, view_offset - low).copy_(grad);
  } else {
    // Locations read more than once: accumulate through flat storage indices.
    const Tensor flat = buffer.view(DimVector{buffer.numel()});
    const Tensor positions = kiln::arange(flat.numel(), DType::Int64, grad.device());
    const Tensor index = kiln::as_strided(positions, size, stride, view_offset - low); // flat positions the view read
    const Tensor flat_index = kiln::reshape(index, DimVector{grad.numel()});
    buffer = kiln::index_add(flat, 0, flat_index, kiln::reshape(grad, DimVector{grad.numel()})).view(buffer.sizes());
  }
  if (input_is_buffer) return buffer;
  return kiln::clone(kiln::as_strided(buffer, input_sizes, input_strides, input_offset - low));
}

}  // namespace kiln::autograd::formula
