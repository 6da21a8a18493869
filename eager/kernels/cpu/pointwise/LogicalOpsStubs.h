// Dispatch stubs of the logical and bitwise kernels, defined per capability in
// eager/kernels/cpu/pointwise/per_capability/LogicalOpsKernel.cpp.
#pragma once

#include <cstdint>

#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/CpuCapability.h"

namespace kiln::native {

enum class LogicalOp : uint8_t { And, Or, Xor };

using logical_fn = void (*)(TensorIterator& iter, LogicalOp op);
using logical_unary_fn = void (*)(TensorIterator& iter);
using shift_fn = void (*)(TensorIterator& iter, bool left);

/// bool out = input0 <op> input1 by truth value, in the inputs' (common) dtype.
KILN_DECLARE_DISPATCH(logical_fn, logical_stub);
/// bool out = !input0, in the input's own dtype.
KILN_DECLARE_DISPATCH(logical_unary_fn, logical_not_stub);
/// Bitwise and/or/xor of integers and bool; NotImplementedError for floats.
KILN_DECLARE_DISPATCH(logical_fn, bitwise_stub);
KILN_DECLARE_DISPATCH(logical_unary_fn, bitwise_not_stub);
/// Shifts of integers; shifting by a negative count or past the width gives 0
/// (left) or the sign (right), as PyTorch.
KILN_DECLARE_DISPATCH(shift_fn, shift_stub);

}  // namespace kiln::native
