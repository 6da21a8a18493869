// The bytes a tensor's elements can touch, for the overlap checks of out=,
// in-place, copy_ and TensorIterator outputs (TensorIterator.cpp, cpu/BinaryOps.cpp,
// cpu/IndexUtils.cpp, cpu/OutFromFunctional.cpp, cpu/FactoryKernels.cpp).
#pragma once

#include <utility>

#include "eager/ops/Tensor.h"

namespace kiln {

/// [first byte, one past the last byte] the elements of a non-empty tensor
/// span (a negative stride reaches below data_ptr).
[[nodiscard]] std::pair<const char*, const char*> byte_span(const Tensor& t);

/// Whether two non-empty tensors' byte spans meet (interleaved views count as meeting).
[[nodiscard]] bool byte_spans_meet(const Tensor& a, const Tensor& b);

/// Whether two tensors are the same view of the same elements (data pointer,
/// dtype, sizes and strides equal): a full overlap, which the checks allow.
[[nodiscard]] bool same_view(const Tensor& a, const Tensor& b);

}  // namespace kiln
