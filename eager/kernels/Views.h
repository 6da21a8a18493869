// Device-agnostic view kernels: they only compute new geometry over the same
// storage, so they serve every backend. Each result shares its base's storage
// and version counter (Note [Views share storage and version]).
#pragma once

#include <bitset>
#include <optional>
#include <vector>

#include "eager/ops/Tensor.h"
// kiln::as_strided, transpose, slice, ... are the dispatcher API generated from
// ops.yaml (the same names and parameters); the bodies below are the
// implementations their view kernels (ViewKernels.cpp) call.
#include "kiln/generated/Functions.h"

namespace kiln {

// Note [Views share storage and version]
// --------------------------------------
// A view is a new TensorImpl over its base's Storage with its own sizes,
// strides and offset (make_view). It shares the base's VersionCounter, so an
// in-place write through any alias bumps the version every alias reports
// (autograd's saved-tensor checks depend on it), and it copies the base's key
// set. It does not share autograd state, but records its base (the root) and
// how it was made, which autograd reads: Note [Views know their base]
// (eager/autograd/ViewAutograd.h).
// In-place view ops (transpose_, squeeze_, as_strided_, ...) change the
// tensor's own geometry instead (set_geometry_) and, like every in-place op in
// PyTorch, bump its version.

/// A view's geometry: sizes, strides (in elements) and storage offset.
struct ViewGeometry {
  DimVector sizes;
  DimVector strides;
  int64_t offset = 0;
};

namespace native {

/// Most dims a dim list (squeeze, flip) may name.
inline constexpr size_t kMaxDims = 64;
/// The dims of `dims` (wrapped against ndim) as a bitset; RuntimeError
/// "dim 0 appears multiple times in the list of dims" as PyTorch.
[[nodiscard]] std::bitset<kMaxDims> dims_to_bitset(IntArrayRef dims, int64_t ndim);

/// A new tensor over `base`'s storage with `geometry` (and `dtype`, default the base's).
[[nodiscard]] Tensor make_view(const Tensor& base, const ViewGeometry& geometry,
                               std::optional<DType> dtype = std::nullopt);
/// Gives `self` the geometry in place (the in-place view ops); returns `self`.
const Tensor& set_geometry_(const Tensor& self, const ViewGeometry& geometry);

// Geometry of each view op, checked with PyTorch's messages. `op` names the op
// in messages that PyTorch words per op ("t" or "t_").
[[nodiscard]] ViewGeometry as_strided_geometry(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                                               std::optional<int64_t> storage_offset);
[[nodiscard]] ViewGeometry transpose_geometry(const Tensor& self, int64_t dim0, int64_t dim1);
[[nodiscard]] ViewGeometry t_geometry(const Tensor& self, const char* op);
[[nodiscard]] ViewGeometry permute_geometry(const Tensor& self, IntArrayRef dims);
/// squeeze(): every size-1 dim; squeeze(dims): those of `dims` that have size 1.
[[nodiscard]] ViewGeometry squeeze_geometry(const Tensor& self, std::optional<IntArrayRef> dims);
[[nodiscard]] ViewGeometry unsqueeze_geometry(const Tensor& self, int64_t dim);
[[nodiscard]] ViewGeometry expand_geometry(const Tensor& self, IntArrayRef sizes);
[[nodiscard]] ViewGeometry diagonal_geometry(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2);
[[nodiscard]] ViewGeometry slice_geometry(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                                          std::optional<int64_t> end, int64_t step);
[[nodiscard]] ViewGeometry select_geometry(const Tensor& self, int64_t dim, int64_t index);
/// view(size): RuntimeError "view size is not compatible ..." when the strides do not allow it.
[[nodiscard]] ViewGeometry view_geometry(const Tensor& self, IntArrayRef sizes);

[[nodiscard]] Tensor as_strided_impl(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                                     std::optional<int64_t> storage_offset = std::nullopt);
[[nodiscard]] Tensor transpose_impl(const Tensor& self, int64_t dim0, int64_t dim1);
/// Elements start, start+step, ... < end along `dim` (Python slice semantics,
/// indices clamped, step > 0).
[[nodiscard]] Tensor slice_impl(const Tensor& self, int64_t dim, std::optional<int64_t> start,
                                std::optional<int64_t> end, int64_t step = 1);
/// Drops `dim`, keeping element `index` along it (negative counts from the end).
[[nodiscard]] Tensor select_impl(const Tensor& self, int64_t dim, int64_t index);
/// The same elements read as `dtype` (PyTorch's view(dtype) rules for other element sizes).
[[nodiscard]] Tensor view_dtype_impl(const Tensor& self, DType dtype);
/// A complex tensor's real view: sizes + [2], strides doubled + [1] (PyTorch's view_as_real).
[[nodiscard]] Tensor view_as_real_impl(const Tensor& self);
/// A [..., 2] float/double tensor as complex: the inverse of view_as_real, with PyTorch's checks.
[[nodiscard]] Tensor view_as_complex_impl(const Tensor& self);
/// Pieces of `split_size` along `dim` (the last may be shorter).
[[nodiscard]] std::vector<Tensor> split_impl(const Tensor& self, int64_t split_size, int64_t dim);
[[nodiscard]] std::vector<Tensor> split_with_sizes_impl(const Tensor& self, IntArrayRef split_sizes, int64_t dim);
[[nodiscard]] std::vector<Tensor> unbind_impl(const Tensor& self, int64_t dim);

/// Strides that give `old` geometry's elements the shape `new_sizes` without a
/// copy, or nullopt (PyTorch's computeStride: each run of merged old dims must
/// be contiguous among itself). reshape views exactly when this succeeds.
[[nodiscard]] std::optional<DimVector> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                                            IntArrayRef new_sizes, int64_t numel);

}  // namespace native

/// Reshape without copying; RuntimeError when the strides do not allow it.
/// One size may be -1 (inferred).
[[nodiscard]] Tensor view(const Tensor& self, IntArrayRef sizes);

/// Infers a -1 in `sizes` from `numel`; RuntimeError naming the shape when invalid.
[[nodiscard]] DimVector infer_size(IntArrayRef sizes, int64_t numel);

}  // namespace kiln
