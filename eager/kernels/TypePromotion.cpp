// Broadcasting and category-based type promotion.
#include "eager/kernels/TypePromotion.h"

#include <algorithm>

#include "eager/core/Error.h"

namespace kiln {

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t from_end = n - 1 - i;
    const int64_t sa = from_end < a.size() ? a[a.size() - 1 - from_end] : 1;
    const int64_t sb = from_end < b.size() ? b[b.size() - 1 - from_end] : 1;
    KILN_CHECK(sa == sb || sa == 1 || sb == 1, "The size of tensor a (", sa, ") must match the size of tensor b (", sb,
               ") at non-singleton dimension ", i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

DimVector broadcast_strides(const Tensor& t, IntArrayRef shape) {
  DimVector strides(shape.size(), 0);
  const size_t offset = shape.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i) {
    strides[offset + i] = t.size(static_cast<int64_t>(i)) == 1 ? 0 : t.stride(static_cast<int64_t>(i));
  }
  return strides;
}

namespace {

/// The dtype a lower tier contributes when its category wins.
DType promote_within_category(DType higher_tier, DType lower_tier) {
  return category(lower_tier) > category(higher_tier) ? lower_tier : higher_tier;
}

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  const bool a_dim = a.dim() > 0, b_dim = b.dim() > 0;
  if (a_dim == b_dim) return promote_types(a.dtype(), b.dtype());
  const DType dim_type = a_dim ? a.dtype() : b.dtype();
  const DType zero_type = a_dim ? b.dtype() : a.dtype();
  return promote_within_category(dim_type, zero_type);
}

DType result_type(const Tensor& a, const Scalar& b) {
  const DType scalar_type = b.is_floating_point() ? default_dtype() : (b.is_bool() ? DType::Bool : DType::Int64);
  return promote_within_category(a.dtype(), scalar_type);
}

bool can_cast(DType from, DType to) {
  // PyTorch's rule: no float -> integral, no non-bool -> bool.
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

}  // namespace kiln
