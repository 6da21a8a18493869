// The out= forms of the reductions and scans (eager/ops/reduction.yaml).
#include <optional>

#include "eager/core/Error.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/TypePromotion.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// Note [Reduction out= forms]
// ---------------------------
// Each out= form computes its functional op and copies the result into `out`,
// resized to the result's shape (resize_output's rules and warning). The out
// tensor's dtype follows PyTorch per op: sum, nansum, prod, cumsum and cumprod
// compute in out's dtype when dtype= is not given; mean, var and std compute as
// the functional op and need a result castable to out's dtype ("result type
// Float can't be cast to the desired output type Long"); amax/amin need out's
// dtype to equal the input's, argmax/argmin int64, all/any bool, logsumexp
// and the vector norm a floating out. The copy costs one pass over the
// (reduced, so small) output; the scans' outputs are full size, which an
// in-place scan kernel could save.

namespace {

void check_same_dtype(const Tensor& self, const Tensor& out) {
  KILN_CHECK(self.dtype() == out.dtype(), "Expected the dtype for input and out to match, but got ",
             scalar_type_name(self.dtype()), " for input's dtype and ", scalar_type_name(out.dtype()),
             " for out's dtype.");
}

void check_bool_out(const Tensor& out, const char* op) {
  KILN_CHECK(out.dtype() == DType::Bool || out.dtype() == DType::UInt8, op,
             " only supports bool tensor for result, got: ", scalar_type_name(out.dtype()));
}

/// With dtype= given, out must have it (PyTorch's structured reductions); else out's dtype is the compute dtype.
DType out_compute_dtype(std::optional<DType> dtype, const Tensor& out) {
  if (dtype) check_out_dtype(out, *dtype);
  return dtype.value_or(out.dtype());
}

/// PyTorch has no bool (scans) or integer (nansum) loop for these out= forms.
void check_loop_exists(const char* kernel, DType dtype, bool exists) {
  KILN_CHECK_NOT_IMPLEMENTED(exists, "\"", kernel, "\" not implemented for '", scalar_type_name(dtype), "'");
}

}  // namespace

Tensor sum_out_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype,
                   const Tensor& out) {
  return copy_castable_to_out(kiln::sum(self, dim, keepdim, out_compute_dtype(dtype, out)), out);
}

Tensor nansum_out_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype,
                      const Tensor& out) {
  const DType compute = out_compute_dtype(dtype, out);
  check_loop_exists("nansum_cpu", compute, is_floating_point(compute));
  return copy_castable_to_out(kiln::nansum(self, dim, keepdim, compute), out);
}

Tensor mean_out_cpu(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype,
                    const Tensor& out) {
  return copy_castable_to_out(kiln::mean(self, dim, keepdim, dtype), out);
}

Tensor prod_out_cpu(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype, const Tensor& out) {
  return copy_castable_to_out(kiln::prod(self, dim, keepdim, out_compute_dtype(dtype, out)), out);
}

Tensor amax_out_cpu(const Tensor& self, IntArrayRef dim, bool keepdim, const Tensor& out) {
  check_same_dtype(self, out);
  return copy_castable_to_out(kiln::amax(self, dim, keepdim), out);
}

Tensor amin_out_cpu(const Tensor& self, IntArrayRef dim, bool keepdim, const Tensor& out) {
  check_same_dtype(self, out);
  return copy_castable_to_out(kiln::amin(self, dim, keepdim), out);
}

Tensor argmax_out_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const Tensor& out) {
  check_out_dtype(out, DType::Int64);
  return copy_castable_to_out(kiln::argmax(self, dim, keepdim), out);
}

Tensor argmin_out_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const Tensor& out) {
  check_out_dtype(out, DType::Int64);
  return copy_castable_to_out(kiln::argmin(self, dim, keepdim), out);
}

Tensor all_dim_out_cpu(const Tensor& self, int64_t dim, bool keepdim, const Tensor& out) {
  check_bool_out(out, "all");
  return copy_castable_to_out(kiln::all(self, dim, keepdim), out);
}

Tensor all_out_cpu(const Tensor& self, const Tensor& out) {
  check_bool_out(out, "all");
  return copy_castable_to_out(kiln::all(self), out);
}

Tensor any_dim_out_cpu(const Tensor& self, int64_t dim, bool keepdim, const Tensor& out) {
  check_bool_out(out, "any");
  return copy_castable_to_out(kiln::any(self, dim, keepdim), out);
}

Tensor any_out_cpu(const Tensor& self, const Tensor& out) {
  check_bool_out(out, "any");
  return copy_castable_to_out(kiln::any(self), out);
}

Tensor var_out_cpu(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                   bool keepdim, const Tensor& out) {
  return copy_castable_to_out(kiln::var(self, dim, correction, keepdim), out);
}

Tensor std_out_cpu(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                   bool keepdim, const Tensor& out) {
  return copy_castable_to_out(kiln::std(self, dim, correction, keepdim), out);
}

Tensor logsumexp_out_cpu(const Tensor& self, IntArrayRef dim, bool keepdim, const Tensor& out) {
  KILN_CHECK(is_floating_point(out.dtype()), "logsumexp(): Expected floating point type for result tensor, but got: ",
             scalar_type_name(out.dtype()));
  return copy_castable_to_out(kiln::logsumexp(self, dim, keepdim), out);
}

Tensor cumsum_out_cpu(const Tensor& self, int64_t dim, std::optional<DType> dtype, const Tensor& out) {
  const DType compute = out_compute_dtype(dtype, out);
  check_loop_exists("cumsum_out_cpu", compute, compute != DType::Bool);
  return copy_castable_to_out(kiln::cumsum(self, dim, compute), out);
}

Tensor cumprod_out_cpu(const Tensor& self, int64_t dim, std::optional<DType> dtype, const Tensor& out) {
  const DType compute = out_compute_dtype(dtype, out);
  check_loop_exists("cumprod_out_cpu", compute, compute != DType::Bool);
  return copy_castable_to_out(kiln::cumprod(self, dim, compute), out);
}

Tensor linalg_vector_norm_out_cpu(const Tensor& self, const Scalar& ord, std::optional<IntArrayRef> dim, bool keepdim,
                                  std::optional<DType> dtype, const Tensor& out) {
  const Tensor result = kiln::linalg_vector_norm(self, ord, dim, keepdim, dtype);
  check_out_dtype(out, result.dtype());
  return copy_castable_to_out(result, out);
}

}  // namespace kiln::native
