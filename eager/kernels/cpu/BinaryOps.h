// CPU binary arithmetic kernels (add for now). Interim elementwise loop: the
// TensorIterator issue replaces the loop with vectorised, parallel ones; the
// broadcasting, promotion and out=/in-place checks stay as written here.
#pragma once

#include "eager/core/Scalar.h"
#include "eager/core/Tensor.h"

namespace kiln::native {

Tensor add_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor add_scalar_cpu(const Tensor& self, const Scalar& other, const Scalar& alpha);
Tensor add_cpu_(const Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor add_out_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out);

}  // namespace kiln::native
