// The creation ops' kernels (ops.yaml: empty, zeros, ones, full, arange,
// linspace, fill_, zero_, copy_): thin adapters from the schema's signatures
// (optional dtype and device) to the implementations in Factories.h and copy/Copy.h,
// plus the composite overloads written with the generated kiln:: API.
#include "eager/kernels/MemorySpan.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

// empty, zeros, ... get a DType and a Device (never optionals), which selects the
// Factories.h implementation over the generated kiln:: overload of the same name.

Tensor empty_cpu(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::empty(size, dtype.value_or(default_dtype()), device.value_or(Device()));
}

Tensor empty_strided_cpu(IntArrayRef size, IntArrayRef stride, std::optional<DType> dtype,
                         std::optional<Device> device) {
  return kiln::empty_strided(size, stride, dtype.value_or(default_dtype()), device.value_or(Device()));
}

Tensor zeros_cpu(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::zeros(size, dtype.value_or(default_dtype()), device.value_or(Device()));
}

Tensor ones_cpu(IntArrayRef size, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::ones(size, dtype.value_or(default_dtype()), device.value_or(Device()));
}

/// As torch.full: without a dtype, a bool fills bool, an int int64, a float the default dtype.
Tensor full_cpu(IntArrayRef size, const Scalar& fill_value, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::full(size, fill_value, dtype.value_or(fill_value.natural_dtype()), device.value_or(Device()));
}

Tensor arange_cpu(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype,
                  std::optional<Device> device) {
  return arange_impl(start, end, step, dtype, device.value_or(Device()));
}

Tensor linspace_cpu(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                    std::optional<Device> device) {
  return linspace_impl(start, end, steps, dtype, device.value_or(Device()));
}

Tensor fill_cpu_(const Tensor& self, const Scalar& value) {
  fill_impl(self, value);
  return self;
}

Tensor copy_cpu_(const Tensor& self, const Tensor& src, bool non_blocking) {
  // As torch: a copy onto the same view is nothing to do, and dense tensors that
  // partly share memory are refused (the rest are too hard to judge and allowed).
  if (same_view(self, src)) return self;
  check_no_overlap(self, src);
  kiln::copy_(self, src);
  return self;
}

// --- composite overloads: written with other ops, through the dispatcher --------

Tensor arange(const Scalar& end, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::arange(Scalar(int64_t{0}), end, Scalar(int64_t{1}), dtype, device);
}

Tensor arange_start(const Scalar& start, const Scalar& end, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::arange(start, end, Scalar(int64_t{1}), dtype, device);
}

Tensor zero_(const Tensor& self) { return kiln::fill_(self, Scalar(int64_t{0})); }

}  // namespace kiln::native
