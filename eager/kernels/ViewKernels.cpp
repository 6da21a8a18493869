// The view ops' kernels (eager/ops/shape.yaml, "views: geometry only"): thin
// adapters over the geometry functions in Views.h. They only compute metadata,
// so they serve every backend. In-place forms (transpose_, squeeze_, ...) give
// self the new geometry. See Note [Views share storage and version].
#include "eager/kernels/Views.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

Tensor as_strided_view(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  return make_view(self, as_strided_geometry(self, size, stride, storage_offset));
}
Tensor as_strided_view_(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                        std::optional<int64_t> storage_offset) {
  return set_geometry_(self, as_strided_geometry(self, size, stride, storage_offset));
}

Tensor view_view(const Tensor& self, IntArrayRef size) { return make_view(self, view_geometry(self, size)); }
Tensor view_dtype_view(const Tensor& self, DType dtype) { return view_dtype_impl(self, dtype); }
Tensor view_as_real_view(const Tensor& self) { return view_as_real_impl(self); }
Tensor view_as_complex_view(const Tensor& self) { return view_as_complex_impl(self); }

Tensor transpose_view(const Tensor& self, int64_t dim0, int64_t dim1) {
  return make_view(self, transpose_geometry(self, dim0, dim1));
}
Tensor transpose_view_(const Tensor& self, int64_t dim0, int64_t dim1) {
  return set_geometry_(self, transpose_geometry(self, dim0, dim1));
}

Tensor t_view(const Tensor& self) { return make_view(self, t_geometry(self, "t")); }
Tensor t_view_(const Tensor& self) { return set_geometry_(self, t_geometry(self, "t_")); }

Tensor permute_view(const Tensor& self, IntArrayRef dims) { return make_view(self, permute_geometry(self, dims)); }

Tensor select_view(const Tensor& self, int64_t dim, int64_t index) {
  return make_view(self, select_geometry(self, dim, index));
}

Tensor slice_view(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                  int64_t step) {
  return make_view(self, slice_geometry(self, dim, start, end, step));
}

Tensor squeeze_view(const Tensor& self) { return make_view(self, squeeze_geometry(self, std::nullopt)); }
Tensor squeeze_dim_view(const Tensor& self, int64_t dim) {
  return make_view(self, squeeze_geometry(self, IntArrayRef(&dim, 1)));
}
Tensor squeeze_dims_view(const Tensor& self, IntArrayRef dim) { return make_view(self, squeeze_geometry(self, dim)); }
Tensor squeeze_view_(const Tensor& self) { return set_geometry_(self, squeeze_geometry(self, std::nullopt)); }
Tensor squeeze_dim_view_(const Tensor& self, int64_t dim) {
  return set_geometry_(self, squeeze_geometry(self, IntArrayRef(&dim, 1)));
}
Tensor squeeze_dims_view_(const Tensor& self, IntArrayRef dim) {
  return set_geometry_(self, squeeze_geometry(self, dim));
}

Tensor unsqueeze_view(const Tensor& self, int64_t dim) { return make_view(self, unsqueeze_geometry(self, dim)); }
Tensor unsqueeze_view_(const Tensor& self, int64_t dim) { return set_geometry_(self, unsqueeze_geometry(self, dim)); }

Tensor expand_view(const Tensor& self, IntArrayRef size, bool /*implicit: only autograd's bookkeeping*/) {
  return make_view(self, expand_geometry(self, size));
}

Tensor diagonal_view(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  return make_view(self, diagonal_geometry(self, offset, dim1, dim2));
}

namespace {

/// Outputs of one op that returns several views may not be modified in place
/// with grad mode on, even when no autograd kernel ran (a base with no
/// history); under the autograd kernel they are NoGradMode here and its
/// note_view sets them (Note [Views know their base]).
std::vector<Tensor> multi_output(std::vector<Tensor> views) {
  for (const Tensor& v : views) {
    if (v.impl()->view_base() != nullptr && v.impl()->view_creation() == ViewCreation::Default) {
      v.impl()->set_view_creation(ViewCreation::MultiOutput);
    }
  }
  return views;
}

}  // namespace

std::vector<Tensor> split_view(const Tensor& self, int64_t split_size, int64_t dim) {
  return multi_output(split_impl(self, split_size, dim));
}
std::vector<Tensor> split_with_sizes_view(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  return multi_output(split_with_sizes_impl(self, split_sizes, dim));
}
std::vector<Tensor> unbind_view(const Tensor& self, int64_t dim) { return multi_output(unbind_impl(self, dim)); }

/// A view of the same geometry; the new tensor never requires grad (the
/// autograd issue makes it a non-differentiable alias).
Tensor detach_view(const Tensor& self) {
  Tensor out = make_view(self, ViewGeometry{DimVector(self.sizes()), DimVector(self.strides()), self.storage_offset()});
  out.impl()->set_view_base(nullptr, ViewCreation::Default);  // not a view under autograd, as PyTorch's detach
  return out;
}
Tensor detach_view_(const Tensor& self) {
  self.set_requires_grad(false);
  return self;
}

}  // namespace kiln::native
