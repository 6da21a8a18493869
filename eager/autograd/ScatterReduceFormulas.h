// Backward formulas of scatter_reduce.two (eager/ops/indexing.yaml), with kiln
// ops so they record for a second derivative.
//
// Note [scatter_reduce gradients]
// -------------------------------
// sum: grad to self, grad gathered to src. mean: the same over each position's
// count (self counting once when included). prod: grad times the product of
// the others, computed without dividing by a zero: self's zeros are replaced by
// one before reducing again, and a src element that is the only zero of its
// position gets the product of the rest from a second reduction with it
// replaced by one (more than one zero: every exclusive product is zero).
// amax/amin: grad shared evenly among the elements equal to the result (self's
// tie counting even when include_self is false, as torch's). include_self=False
// zeroes self's gradient wherever index writes.
#pragma once

#include <string_view>

#include "eager/core/Error.h"

#include "kiln/generated/Functions.h"

namespace kiln::autograd::formula {

namespace scatter_reduce_detail {

[[nodiscard]] inline Tensor as_dtype(const Tensor& mask, DType dtype) { return kiln::_to_copy(mask, dtype); }

/// How many values reach each position of self (self once when included).
[[nodiscard]] inline Tensor counts(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                                   bool include_self) {
  const Tensor start = kiln::full(self.sizes(), Scalar(int64_t{include_self ? 1 : 0}), self.dtype(), self.device());
  return kiln::clamp_min(kiln::scatter_add(start, dim, index, kiln::ones_like(src)), Scalar(int64_t{1}));
}

/// grad / N, N the number of elements (self's and src's) equal to the result at each position.
[[nodiscard]] inline Tensor shared_among_ties(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                                              const Tensor& src, const Tensor& result) {
  const Tensor self_ties = as_dtype(kiln::eq(self, result), self.dtype());
  const Tensor src_ties = as_dtype(kiln::eq(src, kiln::gather(result, dim, index)), self.dtype());
  return kiln::div(grad, kiln::scatter_add(self_ties, dim, index, src_ties));
}

/// torch refuses complex scatter_reduce gradients (at the forward); kiln raises at the backward.
inline void check_real(const Tensor& grad) {
  KILN_CHECK(!is_complex(grad.dtype()),
             "scatter_reduce does not support automatic differentiation for outputs with complex dtype.");
}

}  // namespace scatter_reduce_detail

/// d scatter_reduce.two / d self.
[[nodiscard]] inline Tensor scatter_reduce_backward_self(const Tensor& grad, const Tensor& self, int64_t dim,
                                                         const Tensor& index, const Tensor& src,
                                                         std::string_view reduce, bool include_self,
                                                         const Tensor& result) {
  using namespace scatter_reduce_detail;
  check_real(grad);
  Tensor g = grad;
  if (reduce == "mean") {
    g = kiln::div(grad, counts(self, dim, index, src, include_self));
  } else if (reduce == "prod") {
    const Tensor masked_self = kiln::where(kiln::eq(self, Scalar(0.0)), Scalar(1.0), self);
    const Tensor others = kiln::scatter_reduce(masked_self, dim, index, src, "prod", include_self);
    g = kiln::div(kiln::mul(grad, others), masked_self);
  } else if (reduce == "amax" || reduce == "amin") {
    const Tensor shared = shared_among_ties(grad, self, dim, index, src, result);
    g = kiln::where(kiln::eq(self, result), shared, Scalar(0.0));
  }
  if (!include_self) g = kiln::scatter(g, dim, index, Scalar(0.0));
  return g;
}

/// d scatter_reduce.two / d src.
[[nodiscard]] inline Tensor scatter_reduce_backward_src(const Tensor& grad, const Tensor& self, int64_t dim,
                                                        const Tensor& index, const Tensor& src,
                                                        std::string_view reduce, bool include_self,
                                                        const Tensor& result) {
  using namespace scatter_reduce_detail;
  check_real(grad);
  if (reduce == "sum") return kiln::gather(grad, dim, index);
  if (reduce == "mean") return kiln::gather(kiln::div(grad, counts(self, dim, index, src, include_self)), dim, index);
  if (reduce == "prod") {
    const Tensor src_zero = kiln::eq(src, Scalar(0.0));
    const Tensor zeros_here = kiln::gather(
        kiln::scatter_add(kiln::zeros(self.sizes(), self.dtype(), self.device()), dim, index,
                          as_dtype(src_zero, self.dtype())),
        dim, index);
    const Tensor only_zero = kiln::logical_and(src_zero, kiln::eq(zeros_here, Scalar(1.0)));
    const Tensor masked_src = kiln::where(only_zero, Scalar(1.0), src);
    const Tensor rest = kiln::scatter_reduce(self, dim, index, masked_src, "prod", include_self);
    const Tensor by_rest = kiln::gather(kiln::mul(grad, rest), dim, index);
    const Tensor by_division =
        kiln::div(kiln::gather(kiln::mul(grad, result), dim, index), kiln::where(src_zero, Scalar(1.0), src));
    return kiln::where(only_zero, by_rest, by_division);
  }
  // amax / amin
  const Tensor shared = shared_among_ties(grad, self, dim, index, src, result);
  return kiln::where(kiln::eq(src, kiln::gather(result, dim, index)), kiln::gather(shared, dim, index), Scalar(0.0));
}

}  // namespace kiln::autograd::formula
