// linspace and logspace with 0-dim tensor bounds (ops.yaml linspace.Tensor_Tensor, .Tensor_Scalar,
// .Scalar_Tensor; creation.yaml the logspace ones), as torch's overloads: each bound is read as a
// number and the Scalar overload runs (no gradient flows through the bounds, as in torch), and
// arange's out= forms (ops.yaml arange.out, arange.start_out).
#include <complex>
#include <cstring>
#include <sstream>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// The rank check torch words per overload: "start with 1 dimension(s) and end with 0 dimension(s)."
void check_zero_dim_bounds(const char* op, const Tensor* start, const Tensor* end) {
  const bool start_ok = start == nullptr || start->dim() == 0, end_ok = end == nullptr || end->dim() == 0;
  if (start_ok && end_ok) return;
  std::ostringstream got;
  if (start != nullptr) got << "start with " << start->dim() << " dimension(s)";
  if (start != nullptr && end != nullptr) got << " and ";
  if (end != nullptr) got << "end with " << end->dim() << " dimension(s)";
  KILN_CHECK(false, op, " only supports 0-dimensional start and end tensors, but got ", got.str(), ".");
}

/// Whether the result is a meta tensor (a bound on meta with the result elsewhere is refused: its value is
/// not known).
bool meta_result(std::optional<Device> device) { return device && device->is_meta(); }

/// A CPU 0-dim tensor's value as a Scalar of its kind (bool, int64, double or complex double). For a meta
/// result a meta bound stands for a zero of its kind: the result's size and dtype do not depend on the
/// bounds' values (torch's meta kernels do not read them either), only on their kind.
Scalar bound_value(const Tensor& bound, const char* op, std::optional<Device> device) {
  if (bound.impl()->is_meta() && meta_result(device)) return zero_of_item_kind(bound.dtype());
  KILN_CHECK(!bound.impl()->is_meta() && bound.device().is_cpu(), op,
             ": tensor bounds are read on the CPU; got a bound on ", bound.device().str());
  return visit_dtype_and_complex(bound.dtype(), [&](auto tag) -> Scalar {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, bound.data_ptr(), sizeof(T));
    if constexpr (is_complex_v<T>) {
      return Scalar(std::complex<double>(v.real(), v.imag()));
    } else if constexpr (std::is_same_v<T, bool>) {
      return Scalar(v);
    } else if constexpr (std::is_integral_v<T>) {
      return Scalar(static_cast<int64_t>(v));
    } else {
      return Scalar(static_cast<double>(v));
    }
  });
}

}  // namespace

Tensor linspace_tensor_tensor(const Tensor& start, const Tensor& end, int64_t steps, std::optional<DType> dtype,
                              std::optional<Device> device) {
  check_zero_dim_bounds("linspace", &start, &end);
  return kiln::linspace(bound_value(start, "linspace", device), bound_value(end, "linspace", device), steps, dtype,
                        device);
}

Tensor linspace_tensor_scalar(const Tensor& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                              std::optional<Device> device) {
  check_zero_dim_bounds("linspace", &start, nullptr);
  return kiln::linspace(bound_value(start, "linspace", device), end, steps, dtype, device);
}

Tensor linspace_scalar_tensor(const Scalar& start, const Tensor& end, int64_t steps, std::optional<DType> dtype,
                              std::optional<Device> device) {
  check_zero_dim_bounds("linspace", nullptr, &end);
  return kiln::linspace(start, bound_value(end, "linspace", device), steps, dtype, device);
}

Tensor logspace_tensor_tensor(const Tensor& start, const Tensor& end, int64_t steps, double base,
                              std::optional<DType> dtype, std::optional<Device> device) {
  check_zero_dim_bounds("logspace", &start, &end);
  return kiln::logspace(bound_value(start, "logspace", device), bound_value(end, "logspace", device), steps, base,
                        dtype, device);
}

Tensor logspace_tensor_scalar(const Tensor& start, const Scalar& end, int64_t steps, double base,
                              std::optional<DType> dtype, std::optional<Device> device) {
  check_zero_dim_bounds("logspace", &start, nullptr);
  return kiln::logspace(bound_value(start, "logspace", device), end, steps, base, dtype, device);
}

Tensor logspace_scalar_tensor(const Scalar& start, const Tensor& end, int64_t steps, double base,
                              std::optional<DType> dtype, std::optional<Device> device) {
  check_zero_dim_bounds("logspace", nullptr, &end);
  return kiln::logspace(start, bound_value(end, "logspace", device), steps, base, dtype, device);
}

// --- arange's out= forms ---------------------------------------------------------------------

Tensor arange_start_out_cpu(const Scalar& start, const Scalar& end, const Scalar& step, const Tensor& out) {
  const Tensor values = arange_impl(start, end, step, out.dtype(), out.device());
  // As torch: out keeps its shape when it already holds as many elements, else becomes 1-D.
  if (out.numel() != values.numel()) out.impl()->resize({values.numel()});
  kiln::copy_(out, kiln::reshape(values, out.sizes()));
  return out;
}

Tensor arange_out_cpu(const Scalar& end, const Tensor& out) {
  return arange_start_out_cpu(Scalar(int64_t{0}), end, Scalar(int64_t{1}), out);
}

}  // namespace kiln::native
