// The out= forms of the matrix products (eager/ops/linalg.yaml).
#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/ShapeOps.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [Matrix product out= forms]
// --------------------------------
// Each out= form computes its functional op and copies the result into `out`,
// resized by resize_output's rules (and warning). out's dtype follows PyTorch
// per op: the BLAS products need the result's dtype exactly, each in its own
// words (mm/bmm/addmm/mv/matmul/baddbmm: "Expected out tensor to have dtype
// float, but got long int instead"; dot/vdot, tensordot/inner, multi_dot and
// addbmm have theirs); outer, addr and kron, which PyTorch computes pointwise,
// take any out the result can be cast to. Computing first and copying costs
// one pass over the output, and makes an out that aliases an input safe. The
// autograd key raises for out= with an input that requires grad (generated),
// except for inner and tensordot, composites here as in PyTorch, whose out
// takes the result's history through copy_.

namespace {

Tensor write_out(const Tensor& result, const Tensor& out) {
  check_out_dtype(out, result.dtype());
  return copy_to_out(result, out);
}

Tensor write_dot_out(const Tensor& result, const Tensor& out) {
  KILN_CHECK(out.dtype() == result.dtype(), "result dtype ", scalar_type_name(out.dtype()),
             " does not match input dtype ", scalar_type_name(result.dtype()));
  return copy_to_out(result, out);
}

Tensor write_tensordot_out(const Tensor& result, const Tensor& out) {
  KILN_CHECK(out.dtype() == result.dtype(), "tensordot: Expected the output tensor to have dtype ",
             scalar_type_name(result.dtype()), ", but got an output tensor with dtype ", scalar_type_name(out.dtype()));
  return copy_to_out(result, out);
}

}  // namespace

Tensor mm_out_cpu(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  return write_out(kiln::mm(self, mat2), out);
}
Tensor bmm_out_cpu(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  return write_out(kiln::bmm(self, mat2), out);
}
Tensor addmm_out_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha, const Tensor& out) {
  return write_out(kiln::addmm(self, mat1, mat2, beta, alpha), out);
}
Tensor dot_out_cpu(const Tensor& self, const Tensor& tensor, const Tensor& out) {
  return write_dot_out(kiln::dot(self, tensor), out);
}
Tensor vdot_out_cpu(const Tensor& self, const Tensor& other, const Tensor& out) {
  return write_dot_out(kiln::vdot(self, other), out);
}
Tensor mv_out_cpu(const Tensor& self, const Tensor& vec, const Tensor& out) {
  return write_out(kiln::mv(self, vec), out);
}
Tensor outer_out_cpu(const Tensor& self, const Tensor& vec2, const Tensor& out) {
  return copy_castable_to_out(kiln::outer(self, vec2), out);
}
Tensor matmul_out_cpu(const Tensor& self, const Tensor& other, const Tensor& out) {
  return write_out(kiln::matmul(self, other), out);
}
Tensor baddbmm_out_cpu(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                       const Scalar& alpha, const Tensor& out) {
  return write_out(kiln::baddbmm(self, batch1, batch2, beta, alpha), out);
}
Tensor addbmm_out_cpu(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                      const Scalar& alpha, const Tensor& out) {
  // PyTorch runs addbmm's out= form as an addmm into out, so out meets mat2's dtype check.
  KILN_CHECK(out.dtype() == batch2.dtype(), "self and mat2 must have the same dtype, but got ",
             scalar_type_name(out.dtype()), " and ", scalar_type_name(batch2.dtype()));
  return write_out(kiln::addbmm(self, batch1, batch2, beta, alpha), out);
}
Tensor addmv_out_cpu(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha,
                     const Tensor& out) {
  return write_out(kiln::addmv(self, mat, vec, beta, alpha), out);
}
Tensor addr_out_cpu(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta,
                    const Scalar& alpha, const Tensor& out) {
  return copy_castable_to_out(kiln::addr(self, vec1, vec2, beta, alpha), out);
}
Tensor inner_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return write_tensordot_out(kiln::inner(self, other), out);
}
Tensor kron_out_cpu(const Tensor& self, const Tensor& other, const Tensor& out) {
  return copy_castable_to_out(kiln::kron(self, other), out);
}
Tensor tensordot_out(const Tensor& self, const Tensor& other, IntArrayRef dims_self, IntArrayRef dims_other,
                         const Tensor& out) {
  return write_tensordot_out(kiln::tensordot(self, other, dims_self, dims_other), out);
}
Tensor linalg_multi_dot_out_cpu(TensorList tensors, const Tensor& out) {
  const Tensor result = kiln::linalg_multi_dot(tensors);
  KILN_CHECK(out.dtype() == result.dtype(), "multi_dot(): expected out tensor to have dtype ",
             typemeta_name(result.dtype()), " but got ", typemeta_name(out.dtype()));
  return copy_to_out(result, out);
}

}  // namespace kiln::native
