// copy_: elementwise copy between tensors of the same shape, any dtypes and
// strides, converting values as PyTorch does (via float for float16/bfloat16,
// nonzero-ness for bool). Issue "TensorIterator and the CPU kernels" replaces
// this loop with TensorIterator; the conversion rules stay.
#pragma once

#include <type_traits>

#include "eager/ops/Tensor.h"

namespace kiln {

/// Copies `src` into `dst` (same sizes), converting dtypes. RuntimeError on a
/// shape mismatch naming both shapes.
void copy_(const Tensor& dst, const Tensor& src);

/// A contiguous copy of `src` with dtype `dtype`.
[[nodiscard]] Tensor to_dtype_copy(const Tensor& src, DType dtype);

/// Converts one value between element types. Complex to real keeps the real
/// part (PyTorch warns that the imaginary part is discarded; kiln's Python
/// layer does), real to complex has a zero imaginary part.
template <typename D, typename S>
inline D convert_element(S v) {
  if constexpr (is_complex_v<S> && is_complex_v<D>) {
    return D(static_cast<typename D::value_type>(v.real()), static_cast<typename D::value_type>(v.imag()));
  } else if constexpr (is_complex_v<S>) {
    if constexpr (std::is_same_v<D, bool>) return v != S(0);
    return convert_element<D>(v.real());
  } else if constexpr (is_complex_v<D>) {
    return D(convert_element<typename D::value_type>(v), typename D::value_type(0));
  } else if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
    return convert_element<D>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
    return D(static_cast<float>(v));
  } else {
    return static_cast<D>(v);
  }
}

}  // namespace kiln
