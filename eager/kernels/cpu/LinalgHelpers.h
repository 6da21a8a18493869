// Helpers the matrix-product files share (LinearAlgebra.cpp, LinalgProducts.cpp).
#pragma once

#include "eager/core/Scalar.h"
#include "eager/core/Tensor.h"

namespace kiln::native {

/// beta * self + alpha * product, with beta == 0 ignoring self (nan and inf
/// included) as PyTorch's addmm family does; self broadcasts to the product.
/// Every step goes through the dispatcher (autograd, capture).
[[nodiscard]] Tensor scaled_sum(const Tensor& self, const Tensor& product, const Scalar& beta, const Scalar& alpha);

}  // namespace kiln::native
