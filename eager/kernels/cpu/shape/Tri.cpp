// tril, triu (functional, in-place, out=) and diag_embed. The row loop is
// per_capability/TriKernel.cpp; diag_embed writes self into the diagonal view of zeros.
#include "eager/kernels/cpu/shape/Tri.h"

#include <algorithm>
#include <cstdlib>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/Resize.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/IntoKernels.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(tri_rows_fn, tri_rows_stub);

namespace {

void check_tri_input(const Tensor& self, bool lower) {
  KILN_CHECK(self.dim() >= 2, lower ? "tril" : "triu", ": input tensor must have at least 2 dimensions");
}

/// dst = tril/triu(src, k); dst and src have the same sizes and dtype (dst may be src).
void apply_tri(const Tensor& dst, const Tensor& src, int64_t k, bool lower) {
  if (dst.numel() == 0 || dst.impl()->is_meta()) return;  // on meta the callers' checks are the meta function
  const int64_t nd = dst.dim();
  const int64_t w = dst.itemsize();
  TriPlan plan;
  plan.dst = static_cast<char*>(dst.data_ptr());
  plan.src = static_cast<const char*>(src.data_ptr());
  plan.in_place = dst.data_ptr() == src.data_ptr() && std::equal(dst.strides().begin(), dst.strides().end(),
                                                                  src.strides().begin());
  plan.lower = lower;
  plan.itemsize = w;
  plan.rows = dst.sizes()[nd - 2];
  plan.cols = dst.sizes()[nd - 1];
  plan.k = std::clamp<int64_t>(k, -plan.rows - 1, plan.cols + 1);  // beyond these nothing changes; no overflow
  plan.dst_row_stride = dst.strides()[nd - 2] * w;
  plan.dst_col_stride = dst.strides()[nd - 1] * w;
  plan.src_row_stride = src.strides()[nd - 2] * w;
  plan.src_col_stride = src.strides()[nd - 1] * w;
  int64_t batch = 1;
  for (int64_t d = 0; d < nd - 2; ++d) {
    if (dst.sizes()[d] == 1) continue;
    KILN_CHECK(plan.nbatch < TriPlan::kMaxBatchDims, "tril/triu: too many batch dims");
    plan.batch_sizes[plan.nbatch] = dst.sizes()[d];
    plan.dst_batch_strides[plan.nbatch] = dst.strides()[d] * w;
    plan.src_batch_strides[plan.nbatch] = src.strides()[d] * w;
    ++plan.nbatch;
    batch *= dst.sizes()[d];
  }
  const int64_t grain = std::max<int64_t>(kGrainSize / std::max<int64_t>(plan.cols, 1), 1);
  parallel_for(0, batch * plan.rows, grain, [&](int64_t begin, int64_t end) { tri_rows_stub(plan, begin, end); });
}

Tensor tri(const Tensor& self, int64_t k, bool lower) {
  check_tri_input(self, lower);
  Tensor result = empty(self.sizes(), self.dtype(), self.device());
  apply_tri(result, self, k, lower);
  return result;
}

Tensor tri_(const Tensor& self, int64_t k, bool lower) {
  check_tri_input(self, lower);
  apply_tri(self, self, k, lower);
  self.impl()->bump_version();
  return self;
}

Tensor tri_out(const Tensor& self, int64_t k, const Tensor& out, bool lower) {
  check_tri_input(self, lower);
  check_out_dtype(out, self.dtype());
  resize_output(out, self.sizes());
  if (!out.is_same(self)) check_no_overlap(out, self);
  apply_tri(out, self, k, lower);
  out.impl()->bump_version();
  return out;
}

Tensor tri_with(ResultInto into, const Tensor& out, const Tensor& self, int64_t k, bool lower) {
  switch (into) {
    case ResultInto::NewTensor: return tri(self, k, lower);
    case ResultInto::InPlace: return tri_(self, k, lower);
    case ResultInto::Out: break;
  }
  return tri_out(self, k, out, lower);
}

}  // namespace

// The kernels shape.yaml's kernel_into names (Note [Generated entry points], tools/opgen/into.py).
Tensor tril_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t diagonal) {
  return tri_with(into, out, self, diagonal, /*lower=*/true);
}
Tensor triu_into(ResultInto into, const Tensor& out, const Tensor& self, int64_t diagonal) {
  return tri_with(into, out, self, diagonal, /*lower=*/false);
}

/// Zeros with self's last dim on diagonal `offset` of the (dim1, dim2) planes.
Tensor diag_embed_cpu(const Tensor& self, int64_t offset, int64_t dim1_arg, int64_t dim2_arg) {
  const int64_t ndim = self.dim() + 1;
  const int64_t dim1 = wrap_dim(dim1_arg, ndim);
  const int64_t dim2 = wrap_dim(dim2_arg, ndim);
  KILN_CHECK(dim1 != dim2, "diagonal dimensions cannot be identical ", dim1_arg, ", ", dim2_arg);
  const int64_t length = std::abs(offset) + self.size(-1);
  DimVector sizes(self.sizes());
  sizes.pop_back();
  sizes.insert(static_cast<size_t>(std::min(dim1, dim2)), length);
  sizes.insert(static_cast<size_t>(std::max(dim1, dim2)), length);
  Tensor result = zeros(sizes, self.dtype(), self.device());
  if (result.impl()->is_meta()) return result;  // the checks above are the meta function
  const ViewGeometry diag = diagonal_geometry(result, offset, dim1, dim2);
  copy_strided(static_cast<char*>(result.data_ptr()) + (diag.offset - result.storage_offset()) * result.itemsize(),
               diag.strides, static_cast<const char*>(self.data_ptr()), self.strides(), diag.sizes,
               self.itemsize());
  return result;
}

}  // namespace kiln::native
