// Helpers the shape ops share (eager/kernels/ShapeOps*.cpp, eager/kernels/cpu/
// Cat, Clone, Repeat, Flip, Tri): out= checks in PyTorch's words.
#pragma once

#include <string_view>

#include "eager/ops/Tensor.h"

namespace kiln::native {

/// The C++ type name PyTorch's TypeMeta prints: "float", "long int", "c10::Half", ...
[[nodiscard]] std::string_view typemeta_name(DType dtype);

/// RuntimeError "Expected out tensor to have dtype float, but got long int instead"
/// unless out has `expected` (PyTorch's structured out= kernels).
void check_out_dtype(const Tensor& out, DType expected);

}  // namespace kiln::native
