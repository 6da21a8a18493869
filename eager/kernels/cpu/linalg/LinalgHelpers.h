// Helpers the matrix-product files share (LinearAlgebra.cpp, LinalgProducts.cpp).
#pragma once

#include "eager/core/Scalar.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// beta * self + alpha * product, with beta == 0 ignoring self (nan and inf
/// included) as PyTorch's addmm family does; self broadcasts to the product.
/// Every step goes through the dispatcher (autograd, capture).
[[nodiscard]] Tensor scaled_sum(const Tensor& self, const Tensor& product, const Scalar& beta, const Scalar& alpha);

/// PyTorch's addmm dtype checks, in its order: self against mat2, then mat1
/// against mat2 ("self and mat2 must have the same dtype, but got Float and
/// Double"). addbmm and linear with a bias meet the same checks.
void check_addmm_dtypes(const Tensor& self, const Tensor& mat1, const Tensor& mat2);

/// PyTorch's addmv check: "addmv input tensors must have the same dtype, but
/// got Float, Double, and Float" (self, mat, vec).
void check_addmv_dtypes(const Tensor& self, const Tensor& mat, const Tensor& vec);

}  // namespace kiln::native
