// Helpers the random ops share (Random.cpp, Distributions.cpp): drawing into a
// tensor from a generator, and PyTorch's checks and messages.
#pragma once

#include <optional>
#include <string>

#include "eager/core/GeneratorImpl.h"
#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"  // check_no_internal_overlap
#include "eager/kernels/cpu/random/RandomStubs.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// Fills `self` (any strides) with fill(RandomFill) over numel elements of
/// `words` words each, drawn from `generator` (or the default one) in one
/// reservation. Elements take numbers in row-major order of `self`'s sizes,
/// whatever its strides (a temporary and a copy when it is not contiguous).
/// RuntimeError when elements of `self` share memory.
void draw_into(const Tensor& self, int words, const std::optional<Generator>& generator,
               FunctionRef<void(const RandomFill&)> fill);


/// "float", "c10::Half", "long int": the names PyTorch's random bounds messages
/// use for a dtype (caffe2::TypeMeta's).
[[nodiscard]] std::string_view type_meta_name(DType dtype);

/// PyTorch's "\"<kernel>\" not implemented for '<Type>'" (NotImplementedError)
/// unless `dtype` is floating.
void check_floating(DType dtype, const char* kernel);

}  // namespace kiln::native
