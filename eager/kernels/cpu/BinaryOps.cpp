// Binary arithmetic ops: argument checks and the TensorIterator set-up
// (compiled once); the loops are in kernels/BinaryOpsKernel.cpp.
#include "eager/kernels/cpu/BinaryOps.h"

#include "eager/core/Error.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/BinaryOpsStubs.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(binary_alpha_fn, add_stub);

namespace {

void check_alpha(DType dtype, const Scalar& alpha) {
  KILN_CHECK(!alpha.is_bool() || dtype == DType::Bool, "Boolean alpha only supported for Boolean results.");
  KILN_CHECK(is_floating_point(dtype) || alpha.is_integral() || alpha.is_bool(),
             "For integral input tensors, argument alpha must not be a floating point number.");
}

/// out = self + alpha * other, with `out` undefined (allocate), an in-place
/// self, or an out= tensor.
Tensor add_into(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha, bool inplace) {
  auto iter = TensorIteratorConfig()
                  .set_op_name("add")
                  .add_output(out)
                  .add_const_input(self)
                  .add_const_input(other)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .resize_outputs(!inplace)
                  .build();
  check_alpha(iter.common_dtype(), alpha);
  add_stub(iter, alpha);
  const Tensor& result = iter.output();
  if (out.defined()) result.impl()->bump_version();
  return result;
}

}  // namespace

Tensor add_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return add_into(Tensor(), self, other, alpha, false);
}

Tensor add_scalar_cpu(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return add_into(Tensor(), self, wrapped_scalar_tensor(other, self.device()), alpha, false);
}

Tensor add_cpu_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return add_into(self, self, other, alpha, true);
}

Tensor add_out_cpu(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  return add_into(out, self, other, alpha, false);
}

}  // namespace kiln::native
