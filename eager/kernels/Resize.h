// Resizing out= tensors as PyTorch does.
#pragma once

#include "eager/ops/Tensor.h"

namespace kiln::native {

/// Makes `out` have `shape`: a no-op when it already does; otherwise resizes
/// it, warning (as PyTorch) when it held elements.
void resize_output(const Tensor& out, IntArrayRef shape);

/// The tail of every "compute, then copy" out= form: resizes out to result's
/// shape (resize_output's rule) and copies result into it, through the
/// dispatcher. Returns out.
Tensor copy_to_out(const Tensor& result, const Tensor& out);

/// copy_to_out after PyTorch's cast check for out= ("result type Float can't be
/// cast to the desired output type Long").
Tensor copy_castable_to_out(const Tensor& result, const Tensor& out);

}  // namespace kiln::native
