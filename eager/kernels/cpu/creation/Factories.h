// Creation functions: empty, full, zeros, ones, arange, linspace.
// (The dispatcher issue moves these onto ops.yaml behind BackendSelect; their
// bodies become the CPU kernels.)
#pragma once

#include <optional>

#include <string_view>

#include "eager/core/Error.h"
#include "eager/core/Scalar.h"
#include "eager/ops/Tensor.h"
// kiln::fill_, arange, linspace (and the factories taking an optional dtype and
// device) are the dispatcher API generated from ops.yaml; native::*_impl below
// are their CPU implementations.
#include "kiln/generated/Functions.h"

namespace kiln {

/// Uninitialised contiguous tensor. RuntimeError for negative sizes or a size
/// whose byte count overflows.
[[nodiscard]] Tensor empty(IntArrayRef sizes, DType dtype, Device device = Device());
[[nodiscard]] Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device = Device());
[[nodiscard]] Tensor full(IntArrayRef sizes, const Scalar& value, DType dtype, Device device = Device());
[[nodiscard]] Tensor zeros(IntArrayRef sizes, DType dtype, Device device = Device());
[[nodiscard]] Tensor ones(IntArrayRef sizes, DType dtype, Device device = Device());

namespace native {
// kiln::arange and kiln::linspace are the generated API (same parameters but an
// optional device, so calls would be ambiguous); these are their CPU bodies.
/// Values start, start+step, ... < end. dtype defaults to int64 when all three
/// are integers, else to the default float dtype (as PyTorch).
[[nodiscard]] Tensor arange_impl(const Scalar& start, const Scalar& end, const Scalar& step,
                                 std::optional<DType> dtype = std::nullopt, Device device = Device());
/// `steps` evenly spaced values from start to end inclusive.
[[nodiscard]] Tensor linspace_impl(const Scalar& start, const Scalar& end, int64_t steps,
                                   std::optional<DType> dtype = std::nullopt, Device device = Device());
}  // namespace native

/// Whether `value` lies outside what `dtype` holds, by PyTorch's checked_convert rules
/// (c10/util/TypeCast.h): negative integers may wrap into uint8, floating types take
/// infinities and NaN, bool takes anything.
[[nodiscard]] bool overflows(const Scalar& value, DType dtype);

/// `value` as a T, with PyTorch's Scalar::to<T> check: RuntimeError "value cannot be
/// converted to type int8_t without overflow".
template <typename T>
[[nodiscard]] T checked_scalar_to(const Scalar& value) {
  constexpr DType dtype = dtype_of<T>();
  KILN_CHECK(!overflows(value, dtype), "value cannot be converted to type ", cpp_type_name(dtype),
             " without overflow");
  return value.to<T>();
}

namespace native {
/// Writes `value` (converted to the tensor's dtype, checked as checked_scalar_to) into every element, any strides.
void fill_impl(const Tensor& self, const Scalar& value);
}  // namespace native

}  // namespace kiln
