// Device-agnostic view kernels: they only compute new geometry over the same
// storage, so they serve every backend. Each result shares its base's storage
// and version counter.
#pragma once

#include <optional>

#include "eager/core/Tensor.h"

namespace kiln {

/// A view of `self`'s storage with explicit geometry (bounds-checked).
[[nodiscard]] Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                                std::optional<int64_t> storage_offset = std::nullopt);
/// Reshape without copying; RuntimeError when the strides do not allow it.
/// One size may be -1 (inferred).
[[nodiscard]] Tensor view(const Tensor& self, IntArrayRef sizes);
[[nodiscard]] Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
/// Elements start, start+step, ... < end along `dim` (Python slice semantics,
/// indices clamped, step > 0).
[[nodiscard]] Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                           std::optional<int64_t> end, int64_t step = 1);
/// Drops `dim`, keeping element `index` along it (negative counts from the end).
[[nodiscard]] Tensor select(const Tensor& self, int64_t dim, int64_t index);

/// Infers a -1 in `sizes` from `numel`; RuntimeError naming the shape when invalid.
[[nodiscard]] DimVector infer_size(IntArrayRef sizes, int64_t numel);

}  // namespace kiln
