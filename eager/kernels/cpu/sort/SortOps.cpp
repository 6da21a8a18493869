// sort, argsort, msort and topk (eager/ops/sorting.yaml): argument checks, the
// row plan and the composite forms, compiled once; the loop is in
// per_capability/SortKernel.cpp.
#include <optional>
#include <tuple>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/sort/SortStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(sort_fn, sort_stub);

// Note [Sort order]
// -----------------
// Elements compare as PyTorch orders them: NaN above every other value (last
// ascending, first descending), -0.0 equal to 0.0, float16/bfloat16 through
// float. Equal elements keep their input order whether or not stable=True is
// asked: the loop compares (value, index) pairs, a strict total order, so
// std::sort, std::nth_element and a heap selection all give the one answer a
// stable sort gives, for any thread count. PyTorch's unstable CPU sort may order
// ties differently; that is allowed, and stable=True matches it exactly. topk
// returns its k elements sorted even when sorted=False (any order is allowed).
// The results are new contiguous tensors; rows are read through the input's
// strides, so a non-contiguous input needs no copy.

namespace {

/// The plan for rows along `dim` of `self`, writing `k` elements per row into
/// the contiguous `values` and `indices`.
SortRows plan_rows(const Tensor& self, const Tensor& values, const Tensor& indices, int64_t dim, int64_t k,
                   bool descending) {
  SortRows p;
  p.descending = descending;
  p.k = k;
  if (self.dim() == 0) {
    p.rows = 1;
    p.n = 1;
    return p;
  }
  p.n = self.size(dim);
  p.rows = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == dim) continue;
    p.rows *= self.size(d);
    p.outer_sizes.push_back(self.size(d));
    p.in_outer.push_back(self.stride(d));
    p.values_outer.push_back(values.stride(d));
    p.indices_outer.push_back(indices.stride(d));
  }
  p.in_stride = self.stride(dim);
  p.values_stride = values.stride(dim);
  p.indices_stride = indices.stride(dim);
  return p;
}

}  // namespace

std::tuple<Tensor, Tensor> sort_stable_cpu(const Tensor& self, std::optional<bool> /*stable*/, int64_t dim,
                                           bool descending) {
  const int64_t d = wrap_dim(dim, self.dim());
  Tensor values = empty(self.sizes(), self.dtype(), self.device());
  Tensor indices = empty(self.sizes(), DType::Int64, self.device());
  if (self.numel() == 0) return {values, indices};
  const SortRows p = plan_rows(self, values, indices, d, self.dim() == 0 ? 1 : self.size(d), descending);
  sort_stub(self, values, indices, p);
  return {values, indices};
}

std::tuple<Tensor, Tensor> topk_cpu(const Tensor& self, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t n = self.dim() == 0 ? 1 : self.size(d);
  KILN_CHECK(k >= 0 && k <= n, "selected index k out of range (topk: k = ", k, ", but dim ", d, " of the input of "
             "shape ", self.sizes(), " has size ", n, ")");
  KILN_CHECK(self.dtype() != DType::Bool, "topk does not support bool dtypes on CPU");
  DimVector sizes(self.sizes());
  if (self.dim() > 0) sizes[static_cast<size_t>(d)] = k;
  Tensor values = empty(sizes, self.dtype(), self.device());
  Tensor indices = empty(sizes, DType::Int64, self.device());
  if (values.numel() == 0) return {values, indices};
  // A 0-dim input's outputs are 0-dim too, holding its one element whether k is 0 or 1 (as in
  // PyTorch): the row's k is then 1, or k = 0 would write nothing into them.
  const SortRows p = plan_rows(self, values, indices, d, self.dim() == 0 ? 1 : k, largest);
  sort_stub(self, values, indices, p);
  return {values, indices};
}

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
  return kiln::sort(self, std::optional<bool>(false), dim, descending);
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(kiln::sort(self, std::optional<bool>(false), dim, descending));
}

Tensor argsort_stable(const Tensor& self, bool stable, int64_t dim, bool descending) {
  return std::get<1>(kiln::sort(self, std::optional<bool>(stable), dim, descending));
}

Tensor msort(const Tensor& self) { return std::get<0>(kiln::sort(self, std::optional<bool>(false), 0, false)); }

}  // namespace kiln::native
