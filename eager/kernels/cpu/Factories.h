// Creation functions: empty, full, zeros, ones, arange, linspace.
// (The dispatcher issue moves these onto ops.yaml behind BackendSelect; their
// bodies become the CPU kernels.)
#pragma once

#include <optional>

#include "eager/core/Scalar.h"
#include "eager/core/Tensor.h"

namespace kiln {

/// Uninitialised contiguous tensor. RuntimeError for negative sizes or a size
/// whose byte count overflows.
[[nodiscard]] Tensor empty(IntArrayRef sizes, DType dtype, Device device = Device());
[[nodiscard]] Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device = Device());
[[nodiscard]] Tensor full(IntArrayRef sizes, const Scalar& value, DType dtype, Device device = Device());
[[nodiscard]] Tensor zeros(IntArrayRef sizes, DType dtype, Device device = Device());
[[nodiscard]] Tensor ones(IntArrayRef sizes, DType dtype, Device device = Device());
/// Values start, start+step, ... < end. dtype defaults to int64 when all three
/// are integers, else to the default float dtype (as PyTorch).
[[nodiscard]] Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
                            std::optional<DType> dtype = std::nullopt, Device device = Device());
/// `steps` evenly spaced values from start to end inclusive.
[[nodiscard]] Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                              std::optional<DType> dtype = std::nullopt, Device device = Device());

/// Writes `value` (converted to the tensor's dtype) into every element, any strides.
void fill_(const Tensor& self, const Scalar& value);

}  // namespace kiln
