// The out= forms of the reductions and scans that compute in out's dtype (eager/ops/reduction.yaml).
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
// sum, nansum, prod, cumsum and cumprod compute in out's dtype when dtype= is
// not given (PyTorch's rule for these), so their out= forms are written here:
// each computes its functional op in that dtype and copies the result into
// `out`, resized to the result's shape (resize_output's rules and warning).
// The other reductions' out= forms run the functional op as it is and apply a
// dtype rule to out; they are generated (out_from_functional: Note [Out= dtype
// rules], eager/kernels/cpu/OutFromFunctional.h). The copy costs one pass over
// the (reduced, so small) output; the scans' outputs are full size, which an
// in-place scan kernel could save.

namespace {

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

Tensor prod_out_cpu(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype, const Tensor& out) {
  return copy_castable_to_out(kiln::prod(self, dim, keepdim, out_compute_dtype(dtype, out)), out);
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

}  // namespace kiln::native
