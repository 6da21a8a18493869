// ReduceOp and the element-wise reduction Gloo's algorithms apply with it.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "eager/core/DType.h"

namespace kiln::distributed {

/// torch.distributed.ReduceOp's members that Gloo can run.
enum class ReduceOp : int { Sum = 0, Avg = 1, Product = 2, Min = 3, Max = 4 };

[[nodiscard]] std::string_view reduce_op_name(ReduceOp op);

/// Gloo's reduce-function shape: out[i] = a[i] (op) b[i] for n elements.
using ReduceFunction = std::function<void(void*, const void*, const void*, size_t)>;

/// The function Gloo combines two ranks' elements with (Avg sums; the caller
/// divides afterwards, see divide_in_place). Raises for combinations with no
/// meaning: Min/Max of complex numbers, Avg of integers.
[[nodiscard]] ReduceFunction reduce_function(DType dtype, ReduceOp op, std::string_view what);

/// values[i] /= divisor for a floating or complex buffer (ReduceOp::Avg's last step).
void divide_in_place(void* values, DType dtype, size_t count, int divisor);

}  // namespace kiln::distributed
