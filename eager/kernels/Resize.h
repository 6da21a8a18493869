// Resizing out= tensors as PyTorch does.
#pragma once

#include "eager/core/Tensor.h"

namespace kiln::native {

/// Makes `out` have `shape`: a no-op when it already does; otherwise resizes
/// it, warning (as PyTorch) when it held elements.
void resize_output(const Tensor& out, IntArrayRef shape);

}  // namespace kiln::native
