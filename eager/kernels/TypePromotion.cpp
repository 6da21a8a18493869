// Broadcasting and category-based type promotion.
#include "eager/kernels/TypePromotion.h"

#include <algorithm>
#include <optional>

#include "eager/core/Error.h"

namespace kiln {

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  // From the last dim, as PyTorch's infer_size: with several mismatches the error names the last one.
  for (size_t i = n; i-- > 0;) {
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
  const IntArrayRef sizes = t.sizes(), st = t.strides();
  const size_t offset = shape.size() - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) strides[offset + i] = sizes[i] == 1 ? 0 : st[i];
  return strides;
}

namespace {

/// The dtype a lower tier contributes when its category wins. A complex lower
/// tier keeps a floating higher tier's precision (float64 tensor * complex64
/// 0-d is complex128, float32 tensor * complex128 0-d complex64), as in PyTorch.
DType promote_within_category(DType higher_tier, DType lower_tier) {
  if (category(lower_tier) <= category(higher_tier)) return higher_tier;
  if (is_complex(lower_tier) && is_floating_point(higher_tier)) return to_complex_type(higher_tier);
  return lower_tier;
}

}  // namespace

void ResultTypeState::update(const Tensor& t) {
  if (!t.defined()) return;
  const int tier = t.impl()->is_wrapped_number() ? 2 : (t.dim() == 0 ? 1 : 0);
  DType d = t.dtype();
  if (tier == 2) {
    // A Python float is the default dtype, a Python int int64, whatever precision the tensor holds.
    d = is_floating_point(d)  ? default_dtype()
        : is_complex(d)       ? to_complex_type(default_dtype())
        : d == DType::Bool    ? DType::Bool
                              : DType::Int64;
  }
  tiers_[tier] = tiers_[tier] ? promote_types(*tiers_[tier], d) : d;
}

DType ResultTypeState::result() const {
  std::optional<DType> result;
  for (const auto& tier : tiers_) {
    if (!tier) continue;
    result = result ? promote_within_category(*result, *tier) : *tier;
  }
  KILN_CHECK(result.has_value(), "result_type: no tensor operands");
  return *result;
}

DType result_type(std::span<const Tensor> tensors) {
  ResultTypeState state;
  for (const Tensor& t : tensors) state.update(t);
  return state.result();
}

DType result_type(const Tensor& a, const Tensor& b) {
  const Tensor both[] = {a, b};
  return result_type(both);
}

DType result_type(const Tensor& a, const Scalar& b) {
  return promote_within_category(a.dtype(), b.natural_dtype());
}

bool can_cast(DType from, DType to) {
  // PyTorch's rule: no float -> integral, no non-bool -> bool.
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating_point(from) && !is_floating_point(to) && !is_complex(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

}  // namespace kiln
