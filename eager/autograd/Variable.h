// Tensor operations autograd itself needs: detaching, copying, and the
// arithmetic the engine does on gradients (accumulate, reduce to a shape).
#pragma once

#include "eager/ops/Tensor.h"

namespace kiln::autograd {

/// A new tensor sharing `t`'s storage, geometry and version counter, with no
/// autograd history (what Tensor.detach() returns).
[[nodiscard]] Tensor detached_alias(const Tensor& t);
/// A contiguous copy of `t`'s values, with no autograd history.
[[nodiscard]] Tensor detached_copy(const Tensor& t);
/// A contiguous copy of `t` converted to `dtype`, with no autograd history.
[[nodiscard]] Tensor to_dtype(const Tensor& t, DType dtype);
/// a + b (through the dispatcher, so it is recorded when grad mode is on).
[[nodiscard]] Tensor add(const Tensor& a, const Tensor& b);
/// a += b in place.
Tensor add_(const Tensor& a, const Tensor& b);
/// Sums `grad` down to `shape` (undoing a broadcast), or RuntimeError naming
/// both shapes when `shape` does not broadcast to `grad`'s.
[[nodiscard]] Tensor sum_to(const Tensor& grad, IntArrayRef shape, const char* node_name);

}  // namespace kiln::autograd
