// The view ops' kernels (ops.yaml: as_strided, view, transpose.int, select.int,
// slice.Tensor): thin adapters over the geometry functions in Views.h. They only
// compute metadata, so they serve every backend.
#include "eager/kernels/Views.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

Tensor as_strided_view(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  return as_strided_impl(self, size, stride, storage_offset);
}

Tensor view_view(const Tensor& self, IntArrayRef size) { return kiln::view(self, size); }

Tensor transpose_view(const Tensor& self, int64_t dim0, int64_t dim1) { return transpose_impl(self, dim0, dim1); }

Tensor select_view(const Tensor& self, int64_t dim, int64_t index) { return select_impl(self, dim, index); }

Tensor slice_view(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                  int64_t step) {
  return slice_impl(self, dim, start, end, step);
}

}  // namespace kiln::native
