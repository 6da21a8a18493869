// Broadcasting and type promotion as PyTorch defines them: the rules every
// elementwise op follows (TensorIterator builds on these).
#pragma once

#include <optional>
#include <span>

#include "eager/core/Scalar.h"
#include "eager/ops/Tensor.h"

namespace kiln {

/// The broadcast of two shapes; RuntimeError with PyTorch's text:
/// "The size of tensor a (16) must match the size of tensor b (3) at non-singleton dimension 1".
[[nodiscard]] DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b);

/// Strides that read `t` as if it had shape `shape` (0 along broadcast dims).
[[nodiscard]] DimVector broadcast_strides(const Tensor& t, IntArrayRef shape);

// Note [Promotion by category]
// ----------------------------
// PyTorch promotes operands in three tiers: tensors with dimensions, 0-dim
// tensors, and Python scalars ("wrapped numbers"). A lower tier only changes
// the result when its category (bool < integer < floating) is higher than
// every higher tier's; then the result is the promoted type within that tier
// (for a Python float, the default dtype; for a Python int, int64).
// So float16_tensor + 1.5 is float16, int32_tensor + 2.5 is float32, and
// int8_tensor + int64_zero_dim_tensor is int8.

/// Accumulates operands one at a time into the result dtype, by the three
/// tiers (tensors with dims, 0-dim tensors, wrapped numbers).
class ResultTypeState {
 public:
  void update(const Tensor& t);
  [[nodiscard]] bool empty() const { return !tiers_[0] && !tiers_[1] && !tiers_[2]; }
  /// RuntimeError when no operand was seen.
  [[nodiscard]] DType result() const;

 private:
  std::optional<DType> tiers_[3];
};

/// Result dtype of an op over these tensors.
[[nodiscard]] DType result_type(std::span<const Tensor> tensors);
/// Result dtype of a binary op between two tensors.
[[nodiscard]] DType result_type(const Tensor& a, const Tensor& b);
/// Result dtype of a binary op between a tensor and a Python scalar.
[[nodiscard]] DType result_type(const Tensor& a, const Scalar& b);
/// Whether a value of dtype `from` may be written into `to` by an in-place or out= op.
[[nodiscard]] bool can_cast(DType from, DType to);

}  // namespace kiln
