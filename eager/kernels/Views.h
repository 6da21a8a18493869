// Device-agnostic view kernels: they only compute new geometry over the same
// storage, so they serve every backend. Each result shares its base's storage
// and version counter.
#pragma once

#include <optional>

#include "eager/core/Tensor.h"
// kiln::as_strided, transpose, slice and select are the dispatcher API generated
// from ops.yaml (the same names and parameters); the bodies below are the
// implementations their view kernels (ViewKernels.cpp) call.
#include "kiln/generated/Functions.h"

namespace kiln {

namespace native {
/// A view of `self`'s storage with explicit geometry (bounds-checked).
[[nodiscard]] Tensor as_strided_impl(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                                     std::optional<int64_t> storage_offset = std::nullopt);
[[nodiscard]] Tensor transpose_impl(const Tensor& self, int64_t dim0, int64_t dim1);
/// Elements start, start+step, ... < end along `dim` (Python slice semantics,
/// indices clamped, step > 0).
[[nodiscard]] Tensor slice_impl(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                                std::optional<int64_t> end, int64_t step = 1);
/// Drops `dim`, keeping element `index` along it (negative counts from the end).
[[nodiscard]] Tensor select_impl(const Tensor& self, int64_t dim, int64_t index);
}  // namespace native

/// Reshape without copying; RuntimeError when the strides do not allow it.
/// One size may be -1 (inferred).
[[nodiscard]] Tensor view(const Tensor& self, IntArrayRef sizes);

/// Infers a -1 in `sizes` from `numel`; RuntimeError naming the shape when invalid.
[[nodiscard]] DimVector infer_size(IntArrayRef sizes, int64_t numel);

}  // namespace kiln
